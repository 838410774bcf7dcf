#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/bounded_capture.h"
#include "core/config.h"
#include "core/dump_keeper.h"
#include "core/executor.h"
#include "core/incident_alerts.h"
#include "core/incident_feed.h"
#include "core/incident_recorder.h"
#include "core/ports/alert_sink.h"
#include "core/ports/clock.h"
#include "core/ports/incident_repository.h"
#include "core/ports/thread_inspector.h"
#include "model/mutex.h"

namespace wctmon {

/// One incident change the monitor decided, and what it leads to.
struct IncidentChange {
  IncidentEvent::Type type = IncidentEvent::Type::kUpdated;
  Incident incident;
  /// Capture the evidence of the incident's threads: after the incident is recorded, which is
  /// then recorded again with it (an update).
  bool capture = false;
  /// Take a dump of the incident's process, after its evidence (DumpKeeper).
  bool dump = false;
  /// The runtime stacks (Java frames) the sample gave the threads to capture.
  std::vector<RuntimeStackOf> runtime_stacks{};
};

/// The threads whose evidence an incident carries: a deadlock's cycle; a hang's thread and the
/// threads its chains lead to (the owners it waits on), each once.
[[nodiscard]] std::vector<ThreadRef> evidenceThreads(const Incident& incident);

/// What the monitor's decisions lead to, done after them and in the order they were decided:
/// the evidence captured (ptrace, SuspendThread), the change recorded (the store, then the feed)
/// and its alert sent to the router. It runs on its executor, never under the monitor's decision
/// lock, so that decisions, status reads and the health check never wait on the platform or the
/// disk. Thread-safe: changes come from every sample's strand.
///
/// It is where a recorded incident lives: the open incidents are served from what was recorded
/// (their evidence included), the same that the store holds and that followers and alerts got.
class IncidentEffects {
 public:
  struct Dependencies {
    IncidentRepository* store;   // nullptr: incidents are kept in memory only
    ThreadInspector* inspector;  // nullptr: no evidence is captured
    AlertSink* alerts;           // nullptr: no alerts
    DumpKeeper* dumps;           // nullptr: no dumps are taken
    const Clock& clock;
    /// Where the effects run (the service's pool). Empty: on the thread that queued them, right
    /// away (tests, tools).
    Executor executor = {};
    /// The runtime targets, written again into a store made anew.
    std::function<std::vector<TargetConfig>()> runtime_targets = {};
  };

  struct Counters {
    std::uint64_t captures = 0;
    std::uint64_t dumps = 0;
    std::uint64_t dumps_failed = 0;
    /// Changes queued and not done yet.
    std::size_t pending = 0;
    std::uint64_t store_errors = 0;
    std::size_t pending_writes = 0;
    std::uint64_t store_writes_dropped = 0;
    std::uint64_t alerts_suppressed = 0;
  };

  IncidentEffects(Dependencies deps, const Config::Alerts& limits);
  IncidentEffects(const IncidentEffects&) = delete;
  IncidentEffects& operator=(const IncidentEffects&) = delete;

  /// Whether evidence can be captured at all (a platform with an inspector).
  [[nodiscard]] bool captures() const { return deps_.inspector != nullptr; }
  /// Whether dumps can be taken at all.
  [[nodiscard]] bool dumps() const { return deps_.dumps != nullptr; }
  /// Queues the changes of one decision, after those of every decision before it.
  void push(std::vector<IncidentChange> changes) WCTMON_EXCLUDES(mutex_);
  /// Queues a check of the store: its file still there, and the writes it could not take
  /// retried, in the order of the changes.
  void checkStore() WCTMON_EXCLUDES(mutex_);
  void setAlertLimits(const Config::Alerts& limits) { alerts_.setLimits(limits); }

  /// The highest incident id recorded or ever given by the store (0 without a store).
  [[nodiscard]] std::int64_t lastRecordedId() const { return recorder_.lastId(); }
  /// Takes the incidents the store holds open (at a start: those open when the service stopped)
  /// as open, and returns them.
  [[nodiscard]] std::vector<Incident> reopenStored();
  /// Deletes the resolved incidents past `retention`, and their dumps; safe from any thread.
  void applyRetention(const Config::Retention& retention) const;
  /// A dump of `pid` asked for now, `diagnosis` inside; safe from any thread (it waits for a dump
  /// being written).
  [[nodiscard]] Result<DumpRecord> dumpNow(Pid pid, std::string diagnosis) const;

  /// The processes whose threads were being stopped for evidence (a capture or a dump, from the
  /// decision to take it until it is done) at some time since `since`: a sample of them that
  /// began then may have seen threads of a cycle stopped, or restarting their wait, and cannot
  /// tell that the cycle is gone.
  [[nodiscard]] std::set<Pid> disturbedSince(Clock::SteadyTimePoint since) const
      WCTMON_EXCLUDES(mutex_);

  /// The open incidents as recorded, shared rather than copied; never waits for an effect.
  [[nodiscard]] std::shared_ptr<const std::vector<Incident>> openIncidents() const {
    return recorder_.feed().openIncidents();
  }
  /// The incidents as they are recorded, for live followers.
  [[nodiscard]] IncidentFeed& feed() { return recorder_.feed(); }
  [[nodiscard]] Counters counters() const;

 private:
  void run() WCTMON_EXCLUDES(mutex_);
  void drain() WCTMON_EXCLUDES(mutex_);
  /// Records a change, or holds it while its incident's evidence is taken; queues the taking of
  /// its evidence. Only on the draining thread.
  void apply(IncidentChange& change) WCTMON_EXCLUDES(mutex_);

  /// The evidence of one incident being taken, on the evidence lane.
  struct Taking {
    IncidentEvent::Type type;
    std::set<Pid> stopped;
    bool capture;
    bool dump;
    std::vector<RuntimeStackOf> runtime_stacks;
    /// As recorded, then with its evidence and dump.
    Incident incident;
  };
  /// Captures and dumps: on the lane, never on the draining thread when there is an executor.
  void take(Taking& job) WCTMON_EXCLUDES(mutex_);
  /// Records the incident with its evidence, alerts it, and applies the changes held for it.
  void evidenceTaken(Taking job) WCTMON_EXCLUDES(mutex_);
  /// Takes the evidence queued on the lane, in order, handing each back to the drain.
  void drainLane() WCTMON_EXCLUDES(mutex_);
  void alert(IncidentEvent::Type type, Incident incident, bool captured);
  /// The ids of the open incidents, whose dumps are never deleted to make room.
  [[nodiscard]] std::set<std::int64_t> openIds() const;

  Dependencies deps_;
  IncidentAlerts alerts_;      // thread-safe
  IncidentRecorder recorder_;  // used by the one thread that drains

  mutable Mutex mutex_;  // the queue, never held while doing a change
  std::deque<std::vector<IncidentChange>> queue_ WCTMON_GUARDED_BY(mutex_);
  bool running_ WCTMON_GUARDED_BY(mutex_) = false;
  /// Evidence to take, one incident at a time (each capture stops threads and unwinds stacks).
  std::deque<Taking> lane_ WCTMON_GUARDED_BY(mutex_);
  bool lane_running_ WCTMON_GUARDED_BY(mutex_) = false;
  /// Evidence taken and not yet recorded.
  std::deque<Taking> taken_ WCTMON_GUARDED_BY(mutex_);
  /// By incident id, while its evidence is taken: its changes that came meanwhile, in order.
  /// Only on the draining thread.
  std::map<std::int64_t, std::vector<IncidentChange>> held_;
  /// Per process whose threads evidence is taken from: how many captures or dumps are decided
  /// and not done, and when the last one ended.
  struct Disturbance {
    int in_flight = 0;
    Clock::SteadyTimePoint ended{};
  };
  std::map<Pid, Disturbance> disturbed_ WCTMON_GUARDED_BY(mutex_);
  /// Whether `change` has evidence or a dump to take.
  [[nodiscard]] bool takesEvidence(const IncidentChange& change) const;
  /// The processes whose threads the evidence of `change` stops.
  [[nodiscard]] std::set<Pid> stoppedBy(const IncidentChange& change) const;
  void disturbing(const std::set<Pid>& pids, int delta) WCTMON_EXCLUDES(mutex_);
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> captures_{0};
  std::atomic<std::uint64_t> dumps_{0};
  std::atomic<std::uint64_t> dumps_failed_{0};
};

}  // namespace wctmon
