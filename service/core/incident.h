#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/wait_model.h"

namespace wctmon {

/// A process across PID reuse: the pid and the start time together.
struct ProcessIdentity {
  Pid pid;
  std::uint64_t start_time = 0;
  friend auto operator<=>(const ProcessIdentity&, const ProcessIdentity&) = default;
};

enum class IncidentKind { kDeadlock, kHang };
enum class IncidentState { kOpen, kResolved };

/// "deadlock" / "hang", "open" / "resolved".
[[nodiscard]] const char* toString(IncidentKind kind);
[[nodiscard]] const char* toString(IncidentState state);

/// One deadlock or hang of one process, from the moment it is seen until it is gone.
struct Incident {
  using TimePoint = std::chrono::system_clock::time_point;

  /// Assigned by the store; 0 until stored.
  std::int64_t id = 0;
  IncidentKind kind = IncidentKind::kDeadlock;
  IncidentState state = IncidentState::kOpen;
  ProcessIdentity process;
  std::string process_name;
  /// The target that watches the process.
  std::string target;
  /// What makes two sightings the same incident within one process (cycle threads, hung wait).
  std::string signature;
  /// The threads of the cycle, or the hung thread.
  std::vector<ThreadRef> threads;
  /// Threads blocked behind the cycle or the hung thread.
  std::vector<ThreadRef> spurs;
  TimePoint opened_at;
  TimePoint updated_at;
  std::optional<TimePoint> resolved_at;
  std::string resolution;
  std::string summary;
  std::vector<WaitChain> chains;
  std::vector<ThreadCapture> evidence;
};

}  // namespace wctmon
