#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/ports/clock.h"
#include "core/ports/service_status_source.h"
#include "core/symptom.h"

namespace wctmon {

/// A service name as the SCM compares names: without regard to case (key names are plain ASCII).
[[nodiscard]] std::string foldServiceName(std::string_view name);

/// What counts as a service stuck pending: which services are watched and how long a pending
/// state that gave no wait hint may hold one checkpoint.
struct PendingServiceRules {
  /// How long a pending state with a wait hint of 0 may keep its checkpoint. The hint is the
  /// service's own promise; without one there is nothing to hold it to, and services that report
  /// a bare START_PENDING and then initialise are common, so they get what the SCM gives a
  /// service to answer at all by default (ServicesPipeTimeout, 30 s).
  static constexpr std::chrono::milliseconds kNoHintWait{30000};

  /// Every service, or only those in `names`.
  bool all = false;
  /// Service key names ("Spooler"), matched without regard to case as the SCM matches them.
  std::vector<std::string> names;
  /// The wait allowed to a pending state whose wait hint is 0.
  std::chrono::milliseconds no_hint_wait = kNoHintWait;
};

/// Finds services stuck in a pending state: START_PENDING, STOP_PENDING, CONTINUE_PENDING or
/// PAUSE_PENDING held past the service's wait hint without its checkpoint moving. A checkpoint
/// that moves, a change of state or of process restarts the wait; a service that leaves the
/// pending state, disappears or is no longer selected is forgotten. The wait is counted from the
/// first reading that showed the current checkpoint: a service already stuck when the tracker
/// starts gets its hint once more. Pure: time from the injected clock's steady reading.
class PendingServiceTracker {
 public:
  /// `clock` must outlive the tracker.
  explicit PendingServiceTracker(const Clock& clock) : clock_(clock) {}

  /// Takes one reading of every service and returns a kServiceHung symptom (target "services",
  /// key "service NAME", the service's pid: 0 when the SCM names no process) for each selected
  /// service stuck now, in the order of `readings`. Level-triggered: the whole set that holds
  /// now, every call.
  [[nodiscard]] std::vector<Symptom> update(std::span<const ServiceReading> readings,
                                            const PendingServiceRules& rules);

 private:
  /// Where a pending service stood when its current wait began.
  struct Progress {
    ServiceState state = ServiceState::kStopped;
    std::uint32_t checkpoint = 0;
    Pid pid;
    Clock::SteadyTimePoint since;
  };

  const Clock& clock_;
  /// By lower-case service name: the pending services of the last reading.
  std::unordered_map<std::string, Progress> pending_;
};

}  // namespace wctmon
