#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/incident.h"
#include "core/snapshot.h"
#include "core/wait_model.h"

namespace wctmon {

/// What one sample of one process showed, as far as incidents are concerned.
struct ProcessObservation {
  ProcessIdentity process;
  std::string process_name;
  std::string target;
  std::chrono::milliseconds hang_threshold{30000};
  /// Wait types that are never a hang for this target.
  std::vector<ObjectType> ignore_waits;
  std::vector<ThreadSample> threads;
  /// Confirmed cycles that involve the process.
  std::vector<Deadlock> deadlocks;
  /// The chains of the process's threads.
  std::vector<WaitChain> chains;
};

/// A wait as people read it: "Mutex 0x55d0c0".
[[nodiscard]] std::string waitKeyText(const WaitObject& wait);

/// A change of an incident.
struct IncidentEvent {
  enum class Type { kOpened, kUpdated, kResolved };
  Type type = Type::kOpened;
  Incident incident;
};

/// Turns samples into incidents: a deadlock opens when a confirmed cycle appears and resolves
/// when it is gone; a hang opens when a thread stays in the same wait, without running, for the
/// target's threshold, and resolves when the thread moves on. One deadlock or hang is one
/// incident however long it lasts (keyed by process identity and signature). Pure: no I/O, time
/// from the injected clock.
class IncidentTracker {
 public:
  explicit IncidentTracker(const Clock& clock) : clock_(clock) {}

  /// Feeds one sample of one process; returns what opened, changed or resolved.
  [[nodiscard]] std::vector<IncidentEvent> observe(const ProcessObservation& observation);

  /// The process exited or is no longer watched: its open incidents resolve with `reason`.
  [[nodiscard]] std::vector<IncidentEvent> forget(const ProcessIdentity& process,
                                                  std::string_view reason);

  /// How long a thread has been in its current wait, as far as the samples tell.
  [[nodiscard]] std::optional<std::chrono::milliseconds> waitTime(const ProcessIdentity& process,
                                                                  Tid tid) const;

  /// Sets wait_time on the thread nodes of `chains` from the history.
  void annotateWaitTimes(const ProcessIdentity& process, std::vector<WaitChain>& chains) const;

  /// Takes over incidents that were open when the service last stopped; a sample that still
  /// shows them continues them instead of opening new ones.
  void adopt(const std::vector<Incident>& open);

  /// Records the id the store gave an incident.
  void assignId(const ProcessIdentity& process, const std::string& signature, std::int64_t id);

  /// Records the evidence captured for an open incident, so later records keep it.
  void attachEvidence(const ProcessIdentity& process, const std::string& signature,
                      const std::vector<ThreadCapture>& evidence);

  [[nodiscard]] std::vector<Incident> openIncidents() const;

  /// Processes with history or open incidents.
  [[nodiscard]] std::vector<ProcessIdentity> trackedProcesses() const;

 private:
  struct WaitHistory {
    ObjectType type = ObjectType::kUnknown;
    std::uint64_t key = 0;
    std::string name;
    std::optional<std::uint64_t> switches;
    Clock::TimePoint since;
    /// Seen for the first time in this sample (nothing to compare with yet).
    bool first = true;
    /// The same wait as in the previous sample, without progress in between.
    bool continued = false;
    std::uint64_t seen = 0;  // the sample that last saw it
  };
  struct ProcessState {
    std::uint64_t samples = 0;
    std::map<std::string, Incident> open;                   // by signature
    std::unordered_map<std::int32_t, WaitHistory> history;  // by tid
  };

  void trackDeadlocks(const ProcessObservation& o, ProcessState& state,
                      std::vector<IncidentEvent>& events);
  void trackHangs(const ProcessObservation& o, ProcessState& state,
                  std::vector<IncidentEvent>& events);
  void updateHistory(const ProcessObservation& o, ProcessState& state, Clock::TimePoint now);
  [[nodiscard]] Incident resolved(Incident incident, std::string reason) const;

  const Clock& clock_;
  std::map<ProcessIdentity, ProcessState> processes_;
};

}  // namespace wctmon
