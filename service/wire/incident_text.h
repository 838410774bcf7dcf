#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "model/incident.h"

namespace wctmon::wire {

/// A wall-clock time in the local time zone as operators read it: "2026-11-23 10:00:00", with
/// ".123" when `milliseconds`.
[[nodiscard]] std::string localTimeText(std::chrono::system_clock::time_point t,
                                        bool milliseconds = false);

/// Writes one incident with everything known about it: processes, threads, times, every chain as
/// a tree, each captured thread's stack and registers, and its dump.
void writeIncident(std::ostream& out, const Incident& incident);

/// Writes where a dump is and what it holds (path, format, size, SHA-256, how it was taken), or
/// why there is none.
void writeDump(std::ostream& out, const DumpRecord& dump);

}  // namespace wctmon::wire
