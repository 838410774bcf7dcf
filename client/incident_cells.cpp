#include "client/incident_cells.h"

#include "model/incident.h"
#include "wire/proto_convert.h"

namespace wctmon::client {

std::string kindOf(v1::IncidentKind kind) {
  const auto known = wire::fromProto(kind);
  return known ? toString(*known) : "?";
}

std::string stateOf(v1::IncidentState state) {
  return state == v1::INCIDENT_STATE_OPEN       ? "open"
         : state == v1::INCIDENT_STATE_RESOLVED ? "resolved"
                                                : "?";
}

std::string processesOf(const v1::Incident& i) {
  return withTitle(i.process_name(), i.processes_size() > 0 ? i.processes(0).title() : "") +
         (i.processes_size() > 1 ? " +" + std::to_string(i.processes_size() - 1) : "");
}

}  // namespace wctmon::client
