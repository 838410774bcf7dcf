#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/analyzer.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/incident_alerts.h"
#include "core/incident_feed.h"
#include "core/incident_recorder.h"
#include "core/incident_tracker.h"
#include "core/ports/alert_sink.h"
#include "core/ports/clock.h"
#include "core/ports/incident_repository.h"
#include "core/ports/process_catalog.h"
#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"
#include "core/target_registry.h"
#include "model/mutex.h"

namespace wctmon {

/// A process the monitor watches, with the target that selected it.
struct WatchedProcess {
  ProcessInfo process;
  /// Shared: every sample reads it, nobody changes it in place (reconfiguring replaces it).
  std::shared_ptr<const TargetConfig> target;
  /// The platform's session on the process: what makes its next sample cheap (Linux), its WCT
  /// session (Windows).
  std::shared_ptr<WaitChainSession> session;

  /// What the last sample of the process found.
  struct LastSample {
    Clock::TimePoint at;
    std::uint32_t threads = 0;
    /// "ok", "deadlocked", "hung", "overdue" (cancelled past its deadline), "busy" (the platform
    /// still in a cancelled read), or "error: why".
    std::string state;
  };
  /// None before the first sample.
  std::optional<LastSample> last_sample;
};

/// Counters the service reports about itself.
struct MonitorStats {
  std::uint64_t samples = 0;
  std::uint64_t sample_errors = 0;
  /// Samples cancelled past their deadline, and samples refused because the platform was still
  /// busy with a cancelled one (a read stuck in the kernel).
  std::uint64_t samples_cancelled = 0;
  std::uint64_t samples_refused = 0;
  std::uint64_t incidents_opened = 0;
  std::uint64_t deadlocks_opened = 0;
  std::uint64_t hangs_opened = 0;
  std::uint64_t incidents_resolved = 0;
  std::uint64_t captures = 0;
  std::uint64_t store_errors = 0;
  /// Incidents whose latest change waits for the store (a full disk), and those dropped because
  /// too many waited.
  std::size_t pending_writes = 0;
  std::uint64_t store_writes_dropped = 0;
  std::uint64_t alerts_suppressed = 0;
  std::size_t watched = 0;
  std::size_t targets = 0;
  /// Threads of the watched processes as of their last samples.
  std::uint64_t watched_threads = 0;
  /// Side effects decided but not done yet (captures, store writes, alerts).
  std::size_t pending_effects = 0;
};

/// The service's decisions, independent of how they are scheduled: which processes to watch
/// (discovery), what one sample of a process means (incidents, evidence, records, alerts), and
/// the registered targets. Thread-safe: samples of different processes may run at once.
///
/// Decisions (the tracker, counters, ids, rate limits) are made under one lock that is held only
/// for them. What they lead to — capturing evidence (ptrace, SuspendThread), writing the store
/// (an fsync), sending alerts — runs afterwards, in the order decided, on the effects executor,
/// so that status reads and the health check never wait on the platform or the disk.
class Monitor {
 public:
  struct Dependencies {
    WaitChainSource& source;
    ThreadInspector* inspector;
    ProcessCatalog& catalog;
    IncidentRepository* store;  // nullptr: incidents are kept in memory only
    AlertSink* alerts;          // nullptr: no alerts
    const Clock& clock;
    /// Where side effects run (the service's pool). Empty: on the thread that decided them,
    /// right after the decision (tests, tools).
    Executor effects = {};
  };

  Monitor(Dependencies deps, Config config);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// What changed in the set of watched processes.
  struct Discovery {
    std::vector<WatchedProcess> added;
    std::vector<ProcessIdentity> removed;
  };

  /// Scans the processes: starts watching new matches, stops watching those that exited, were
  /// replaced (PID reuse) or no longer match; their open incidents resolve.
  [[nodiscard]] Discovery discover();

  /// Called once a sample's decisions are made; false when the process is gone (stop watching).
  using SampleDone = std::function<void(bool alive)>;

  /// Samples one watched process through its session: the analysis runs as completions on
  /// `executor` (the process's strand), its decisions are made under the lock, `done` runs on
  /// `executor`, and the side effects follow on the effects executor.
  void asyncSample(const ProcessIdentity& process, Executor executor, SampleDone done);

  /// Cancels the sample of `process` in flight (past its deadline): it completes now, counted as
  /// cancelled; the platform's work for it is left to end on its own.
  void cancelSample(const ProcessIdentity& process);

  /// Installs a new configuration (targets, thresholds); the next discovery applies it.
  void reconfigure(Config config);

  /// The targets, of the file and added at run time; a change applies at the next discovery.
  [[nodiscard]] TargetRegistry& targets() { return targets_; }
  [[nodiscard]] const TargetRegistry& targets() const { return targets_; }
  [[nodiscard]] std::vector<WatchedProcess> watched() const;
  [[nodiscard]] std::optional<WatchedProcess> watchedProcess(const ProcessIdentity& process) const;
  /// The sampling interval of a watched process (cheaper than watchedProcess()).
  [[nodiscard]] std::optional<std::chrono::milliseconds> intervalOf(
      const ProcessIdentity& process) const;
  /// The open incidents as of the last decision, shared rather than copied, and the counters:
  /// neither waits for the decision lock.
  [[nodiscard]] std::shared_ptr<const std::vector<Incident>> openIncidents() const;
  [[nodiscard]] MonitorStats stats() const;
  /// The incidents as they are recorded (after their store write), for live followers.
  [[nodiscard]] IncidentFeed& feed() { return recorder_.feed(); }
  [[nodiscard]] Config config() const;

  /// Applies the retention settings to the store.
  void applyRetention();

  /// Resolves every open incident of processes that are no longer there; used at start.
  void adoptStoredIncidents();

 private:
  /// What one incident event leads to, decided under the lock and done after it.
  struct Effect {
    IncidentEvent::Type type = IncidentEvent::Type::kUpdated;
    Incident incident;
    /// Capture the evidence of the incident's threads: after the incident is recorded and
    /// published, then recorded and published again with it (an update).
    bool capture = false;
    /// The runtime stacks (Java frames) the sample gave the threads to capture.
    std::vector<RuntimeStackOf> runtime_stacks;
    std::optional<Alert> alert;
  };

  /// Decides what `events` lead to and queues it; called with the lock held. `threads` are
  /// those of the sample the events come from, if any.
  void handle(std::vector<IncidentEvent> events, std::span<const ThreadSample> threads = {})
      WCTMON_REQUIRES(mutex_);
  [[nodiscard]] bool shouldCapture(const Incident& incident) WCTMON_REQUIRES(mutex_);
  /// Takes one finished analysis of `process` into the tracker and queues what follows;
  /// returns whether the process is still watched.
  [[nodiscard]] bool takeSample(const ProcessIdentity& process,
                                std::shared_ptr<const TargetConfig> target,
                                Result<Analysis> analysis) WCTMON_EXCLUDES(mutex_);
  /// Starts doing the queued effects unless that is under way; called without the lock.
  void runEffects() WCTMON_EXCLUDES(mutex_, effects_mutex_);
  void drainEffects() WCTMON_EXCLUDES(mutex_, effects_mutex_);
  void apply(Effect& effect) WCTMON_EXCLUDES(mutex_, effects_mutex_);
  /// Takes a process that is no longer watched out of the thread count; with the lock held.
  void forgetThreads(const WatchedProcess& process) WCTMON_REQUIRES(mutex_);

  Dependencies deps_;
  WaitChainAnalyzer analyzer_;

  mutable Mutex mutex_;  // the decision lock
  Config config_ WCTMON_GUARDED_BY(mutex_);
  TargetRegistry targets_;
  std::map<ProcessIdentity, WatchedProcess> watched_ WCTMON_GUARDED_BY(mutex_);
  /// Ids are given where incidents are decided, so that no decision waits for the store; kept
  /// above the store's highest.
  IncidentIds ids_;
  IncidentTracker tracker_ WCTMON_GUARDED_BY(mutex_);
  IncidentAlerts alerts_;  // thread-safe
  /// When each watched process was last captured (steady: an NTP step must not allow a second).
  std::map<ProcessIdentity, Clock::SteadyTimePoint> last_capture_ WCTMON_GUARDED_BY(mutex_);

  /// The counters of MonitorStats, read without the decision lock: a status read never waits
  /// for a decision, nor for a thread that holds the lock and has lost its core.
  struct Counters {
    std::atomic<std::uint64_t> samples{0};
    std::atomic<std::uint64_t> sample_errors{0};
    std::atomic<std::uint64_t> samples_cancelled{0};
    std::atomic<std::uint64_t> samples_refused{0};
    std::atomic<std::uint64_t> incidents_opened{0};
    std::atomic<std::uint64_t> deadlocks_opened{0};
    std::atomic<std::uint64_t> hangs_opened{0};
    std::atomic<std::uint64_t> watched_threads{0};
    std::atomic<std::uint64_t> incidents_resolved{0};
    std::atomic<std::uint64_t> captures{0};
    std::atomic<std::size_t> watched{0};
    std::atomic<std::size_t> pending_effects{0};
  };
  Counters counters_;
  /// The open incidents as of the last decision or capture that changed them, published for
  /// readers; the lock guards only the pointer.
  void publishOpenIncidents() WCTMON_REQUIRES(mutex_);
  mutable Mutex published_mutex_;
  std::shared_ptr<const std::vector<Incident>> open_incidents_ WCTMON_GUARDED_BY(published_mutex_) =
      std::make_shared<const std::vector<Incident>>();

  mutable Mutex effects_mutex_;  // the queue of effects, never held while doing one
  std::deque<std::vector<Effect>> effects_ WCTMON_GUARDED_BY(effects_mutex_);
  bool effects_running_ WCTMON_GUARDED_BY(effects_mutex_) = false;

  /// Where the effects record incidents (the store, the feed). Last: its last write at the end
  /// reads what is live from the members above.
  IncidentRecorder recorder_;
};

}  // namespace wctmon
