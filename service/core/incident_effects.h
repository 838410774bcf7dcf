#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <vector>

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

/// The most threads of one incident whose evidence is captured: each is stopped and unwound in
/// turn (up to about 0.1 s each), so that a deadlock of thousands of threads would hold the
/// threads and the service's memory for minutes. The rest are named in the evidence, not taken.
inline constexpr std::size_t kMaxCapturedThreads = 32;

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
  void apply(IncidentChange& change) WCTMON_EXCLUDES(mutex_);
  /// The ids of the open incidents, whose dumps are never deleted to make room.
  [[nodiscard]] std::set<std::int64_t> openIds() const;

  Dependencies deps_;
  IncidentAlerts alerts_;      // thread-safe
  IncidentRecorder recorder_;  // used by the one thread that drains

  mutable Mutex mutex_;  // the queue, never held while doing a change
  std::deque<std::vector<IncidentChange>> queue_ WCTMON_GUARDED_BY(mutex_);
  bool running_ WCTMON_GUARDED_BY(mutex_) = false;
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> captures_{0};
  std::atomic<std::uint64_t> dumps_{0};
  std::atomic<std::uint64_t> dumps_failed_{0};
};

}  // namespace wctmon
