#include "model/incident.h"

namespace wctmon {

const char* toString(IncidentKind kind) {
  return kind == IncidentKind::kDeadlock ? "deadlock" : "hang";
}

const char* toString(IncidentState state) {
  return state == IncidentState::kOpen ? "open" : "resolved";
}

std::string withTitle(const std::string& name, const std::string& title) {
  return title.empty() ? name : name + " [" + title + "]";
}

}  // namespace wctmon
