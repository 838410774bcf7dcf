#pragma once

#include <string>

#include "wctmon/v1/incident.pb.h"

namespace wctmon::client {

/// An incident's kind as the flags spell it ("deadlock", "service-hung"); "?" for one this build
/// does not know.
[[nodiscard]] std::string kindOf(v1::IncidentKind kind);

/// "open", "resolved", "?".
[[nodiscard]] std::string stateOf(v1::IncidentState state);

/// "name", or "name +2" when the incident spans more processes (with the title the first gave
/// itself, when it has one).
[[nodiscard]] std::string processesOf(const v1::Incident& incident);

}  // namespace wctmon::client
