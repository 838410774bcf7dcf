#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/config.h"
#include "core/incident_ids.h"
#include "core/ports/clock.h"
#include "core/symptom.h"
#include "model/incident.h"
#include "model/snapshot.h"
#include "model/wait_model.h"

namespace wctmon {

/// What one sample of one process showed, as far as incidents are concerned.
struct ProcessObservation {
  ProcessIdentity process;
  std::string process_name;
  /// The title the process gave itself; empty when none.
  std::string process_title;
  /// The target that watches the process: its name, its hang threshold, the wait types that are
  /// never a hang for it, and whether its samples follow chains into other processes (out_of_proc:
  /// a cycle across processes that involves this one would be among `deadlocks`; without it only
  /// cycles within the process are seen). Never null.
  std::shared_ptr<const TargetConfig> target;
  std::vector<ThreadSample> threads;
  /// Confirmed cycles that involve the process.
  std::vector<Deadlock> deadlocks;
  /// The chains of the process's threads.
  std::vector<WaitChain> chains;
  /// The other processes whose threads appear in `deadlocks` (start time and current name),
  /// sorted by pid; one missing here is known by its pid alone.
  std::vector<IncidentProcess> peers;
  /// The processes whose threads were being stopped for evidence while this sample ran
  /// (IncidentEffects::disturbedSince): the sample cannot tell that a cycle of theirs is gone.
  std::set<Pid> disturbed;
  /// The sample did not follow chains into other processes though its target does: every cycle
  /// across processes it is in was shown by another one's samples
  /// (IncidentTracker::leadsElsewhere). It tells that such a cycle is gone only when one of its own
  /// threads left it.
  bool others_left_out = false;
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
/// incident however long it lasts. A deadlock is keyed by its cycle (the process identities and
/// tids of its threads), whichever watched process's sample shows it, so a cycle across several
/// watched processes is one incident listing them all; a hang by its process and signature.
/// Pure: no I/O, time from the injected clock: how long a thread waits on its steady reading,
/// when an incident opened or changed on its wall clock.
class IncidentTracker {
 public:
  /// Sampling intervals in a row below busy.cpu_percent that end a busy incident.
  static constexpr unsigned kQuietSamplesToResolve = 3;

  /// New incidents take their ids from `ids`; adopted ones keep theirs, and `ids` gives none of
  /// them again.
  IncidentTracker(const Clock& clock, IncidentIds& ids) : clock_(clock), ids_(ids) {}

  /// Feeds one sample of one process; returns what opened, changed or resolved.
  [[nodiscard]] std::vector<IncidentEvent> observe(const ProcessObservation& observation);

  /// The process is no longer sampled (no target selects it): its hangs resolve with `reason`;
  /// a deadlock it takes part in resolves only when no other sampled process can still tell
  /// whether its cycle is there.
  [[nodiscard]] std::vector<IncidentEvent> forget(const ProcessIdentity& process,
                                                  std::string_view reason);

  /// The process exited: every incident it takes part in resolves (a cycle cannot outlive one
  /// of its threads).
  [[nodiscard]] std::vector<IncidentEvent> exited(const ProcessIdentity& process);

  /// How long a thread has been in its current wait, as far as the samples tell.
  [[nodiscard]] std::optional<std::chrono::milliseconds> waitTime(const ProcessIdentity& process,
                                                                  Tid tid) const;

  /// Sets wait_time on the thread nodes of `chains` from the history, where the samples saw the
  /// wait for longer than the platform's reading on the node says; never a made-up 0.
  void annotateWaitTimes(const ProcessIdentity& process, std::span<WaitChain> chains) const;

  /// Takes over incidents that were open when the service last stopped; a sample that still
  /// shows them continues them instead of opening new ones. Deadlocks are keyed by their cycle:
  /// several open incidents of one cycle (one per process, as older versions kept them) become
  /// the oldest one, and the others resolve as its duplicates (returned with any update).
  [[nodiscard]] std::vector<IncidentEvent> adopt(std::vector<Incident> open);

  /// Opens an incident of the symptom's kind in the observed process (`o`: every thread's chain
  /// at the moment), unless one with its key is open already; returns what opened.
  [[nodiscard]] std::vector<IncidentEvent> raise(const ProcessObservation& o,
                                                 const Symptom& symptom);

  /// Resolves the open incident of `kind` with `key`, if any, with `resolution`; of `process`
  /// only, when given.
  [[nodiscard]] std::vector<IncidentEvent> clear(IncidentKind kind, std::string_view key,
                                                 std::string_view resolution,
                                                 std::optional<ProcessIdentity> process = {});

  /// Whether an incident of `kind` with `key` is open.
  [[nodiscard]] bool isOpen(IncidentKind kind, std::string_view key) const;

  /// The stall of the observed process, when it is stalled: every thread blocked on something
  /// only another of its threads can end (a lock, a condition, a join; not a poll, a socket, a
  /// sleep or a child), none scheduled for the target's hang threshold, no deadlock open in it,
  /// and no thread of another process that its chains lead to running. Needs the history of an
  /// earlier sample: a first sample is never a stall.
  [[nodiscard]] std::optional<Symptom> stallOf(const ProcessObservation& o) const;

  /// Threads of the observed process that have used at least the target's busy.cpu_percent of a
  /// core in every sample for its busy.threshold, and have no busy incident open: the ones whose
  /// frames are worth sampling.
  [[nodiscard]] std::vector<ThreadRef> busyThreads(const ProcessObservation& o) const;

  /// How long `t` has been busy, as far as the samples tell; none when it is not.
  [[nodiscard]] std::optional<std::chrono::milliseconds> busyFor(const ProcessIdentity& process,
                                                                 Tid t) const;

  /// Resolves the busy incidents of the observed process whose thread is no longer busy: gone,
  /// or below busy.cpu_percent for kQuietSamplesToResolve intervals in a row.
  [[nodiscard]] std::vector<IncidentEvent> settleBusy(const ProcessObservation& o);

  /// The most severe kind of incident open whose first process is `process` (a deadlock over a
  /// stall over the others); none when none is. Cheap: it copies no incident.
  [[nodiscard]] std::optional<IncidentKind> openKindOf(const ProcessIdentity& process) const;

  /// Whether the next sample of `process` may leave other processes out: every open cycle across
  /// processes that it is in is followed by another process's samples, the one of its latest
  /// observers that comes first. A ring of a thousand watched processes is then read whole by
  /// one sample an interval, not by each member's (each of those was as costly as the ring is
  /// long); the others' samples still see their own threads leave it.
  [[nodiscard]] bool leadsElsewhere(const ProcessIdentity& process) const;

  [[nodiscard]] std::vector<Incident> openIncidents() const;

  /// Processes with history or open incidents, every known process of an open deadlock
  /// included.
  [[nodiscard]] std::vector<ProcessIdentity> trackedProcesses() const;

 private:
  struct WaitHistory {
    ObjectType type = ObjectType::kUnknown;
    std::uint64_t key = 0;
    std::string name;
    std::optional<std::uint64_t> switches;
    Clock::SteadyTimePoint since;
    /// Seen for the first time in this sample (nothing to compare with yet).
    bool first = true;
    /// The same wait as in the previous sample, without progress in between.
    bool continued = false;
    std::uint64_t seen = 0;  // the sample that last saw it
  };
  /// How much of a core a thread used, or wanted, between samples.
  struct CpuHistory {
    /// CPU time, and CPU time plus run-queue time where the platform reads it: the time the
    /// thread used a core or wanted one.
    std::chrono::nanoseconds cpu{0};
    std::chrono::nanoseconds wanted{0};
    Clock::SteadyTimePoint at;
    /// Intervals in a row below busy.cpu_percent: its busy incident resolves after
    /// kQuietSamplesToResolve of them, not at one slow interval on a loaded machine.
    unsigned quiet = 0;
    /// Since when every interval between samples showed it using, or waiting in a run queue to
    /// use, at least busy.cpu_percent of a core.
    std::optional<Clock::SteadyTimePoint> busy_since;
    std::uint64_t seen = 0;
  };
  struct ProcessState {
    std::uint64_t samples = 0;
    /// Its latest sample followed chains into other processes.
    bool sees_other_processes = false;
    /// Hangs and incidents of symptoms (a probe, a stall), by signature.
    std::map<std::string, Incident> open;
    std::unordered_map<std::int32_t, WaitHistory> history;  // by tid
    std::unordered_map<std::int32_t, CpuHistory> cpu;       // by tid
    /// Its latest sample ran while its threads were stopped for evidence.
    bool disturbed = false;
  };
  /// A deadlock's identity: its cycle threads with their processes, in order. A start time of
  /// 0 stands for a process known by its pid alone (see sameCycle()).
  using CycleKey = std::vector<std::pair<ProcessIdentity, std::int32_t>>;
  struct OpenDeadlock {
    Incident incident;
    /// Processes whose latest sample showed the cycle.
    std::set<ProcessIdentity> observers;
    /// The threads behind the cycle, as each observer last saw them (the incident has them all).
    std::map<ProcessIdentity, std::vector<ThreadRef>> spurs;
    /// Processes whose latest sample, since the last one that showed the cycle, found it gone;
    /// a second such sample of one of them ends it.
    std::set<ProcessIdentity> doubted_by;
    /// What each cycle thread waits on (type, key), as its own process's sample last showed it
    /// in the cycle.
    std::map<ThreadRef, std::pair<ObjectType, std::uint64_t>> waits;
    /// The latest chain of each cycle thread, from the sample of its own process.
    std::map<ThreadRef, WaitChain> chains;
  };
  using Deadlocks = std::map<CycleKey, OpenDeadlock>;

  void trackDeadlocks(const ProcessObservation& o, std::vector<IncidentEvent>& events);
  void trackHangs(const ProcessObservation& o, ProcessState& state,
                  std::vector<IncidentEvent>& events);
  void updateHistory(const ProcessObservation& o, ProcessState& state, Clock::SteadyTimePoint now);
  void updateCpu(const ProcessObservation& o, ProcessState& state, Clock::SteadyTimePoint now);
  [[nodiscard]] Incident resolved(Incident incident, std::string reason) const;
  /// The open deadlock of `cycle`, also when it was keyed with start times then unknown (it is
  /// re-keyed with the ones `cycle` knows).
  [[nodiscard]] Deadlocks::iterator findDeadlock(const CycleKey& cycle);
  [[nodiscard]] static CycleKey keyOf(const Incident& incident);
  /// Whether a thread of the sampled process in `d`'s cycle has left the wait it had in the
  /// cycle: it runs, is gone, or waits on another object. Its wait's name alone may change (a
  /// lock file deleted meanwhile), and a stop (a signal, a tracer) holds it where it was.
  [[nodiscard]] static bool leftCycle(const ProcessObservation& o, const CycleKey& cycle,
                                      const OpenDeadlock& d);
  /// Whether a sampled process other than `except` can still tell whether `d`'s cycle is there.
  [[nodiscard]] bool stillWatched(const CycleKey& cycle, const OpenDeadlock& d,
                                  const ProcessIdentity& except) const;
  /// Resolves the deadlocks `process` took part in or saw, now that it is no longer sampled.
  void leaveDeadlocks(const ProcessIdentity& process, bool exited, std::string_view reason,
                      std::vector<IncidentEvent>& events);

  const Clock& clock_;
  IncidentIds& ids_;
  std::map<ProcessIdentity, ProcessState> processes_;
  Deadlocks deadlocks_;
};

}  // namespace wctmon
