#include "model/incident.h"

namespace wctmon {

const char* toString(IncidentKind kind) {
  switch (kind) {
    case IncidentKind::kDeadlock:
      return "deadlock";
    case IncidentKind::kHang:
      return "hang";
    case IncidentKind::kUnresponsive:
      return "unresponsive";
    case IncidentKind::kBusy:
      return "busy";
    case IncidentKind::kStall:
      return "stall";
    case IncidentKind::kServiceHung:
      return "service-hung";
    case IncidentKind::kWindowHung:
      return "window-hung";
  }
  return "?";
}

std::string kindWireName(IncidentKind kind) {
  std::string name = "INCIDENT_KIND_";
  for (const char c : std::string_view(toString(kind))) {
    name += c == '-' ? '_' : static_cast<char>(c - 'a' + 'A');
  }
  return name;
}

std::optional<IncidentKind> incidentKindFromString(std::string_view name) {
  for (const auto kind : kIncidentKinds) {
    if (name == toString(kind)) return kind;
  }
  return std::nullopt;
}

const char* toString(IncidentState state) {
  return state == IncidentState::kOpen ? "open" : "resolved";
}

std::string withTitle(const std::string& name, const std::string& title) {
  return title.empty() ? name : name + " [" + title + "]";
}

}  // namespace wctmon
