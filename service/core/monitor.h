#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/analyzer.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/incident_effects.h"
#include "core/incident_tracker.h"
#include "core/ports/clock.h"
#include "core/ports/hot_spot_sampler.h"
#include "core/ports/process_catalog.h"
#include "core/ports/wait_chain_source.h"
#include "core/symptom.h"
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
  /// Incidents opened, by kind (indexed by IncidentKind).
  std::array<std::uint64_t, kIncidentKindCount> opened_by_kind{};
  std::uint64_t incidents_resolved = 0;
  std::uint64_t captures = 0;
  /// Dumps written for incidents, and those that could not be (their incident says why).
  std::uint64_t dumps = 0;
  std::uint64_t dumps_failed = 0;
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
/// (discovery against the targets), and what one sample of a process means (incidents opened,
/// updated and resolved, and which of them get their evidence captured). Thread-safe: samples
/// of different processes may run at once.
///
/// Decisions (the tracker, counters, ids, the capture interval) are made under one lock that is
/// held only for them. What they lead to — capturing evidence, recording, alerting — is handed
/// to the incident effects in the order decided, and done there off the lock.
class Monitor {
 public:
  struct Dependencies {
    WaitChainSource& source;
    ProcessCatalog& catalog;
    const Clock& clock;
    /// What selects the processes to watch; read at each discovery.
    const TargetRegistry& targets;
    /// Where decided incident changes go.
    IncidentEffects& effects;
    /// Where a busy thread's frames are sampled; none: busy threads are not looked for.
    HotSpotSampler* hot_spots = nullptr;
  };

  /// How long each of the two windows of a busy thread's profile lasts.
  static constexpr std::chrono::milliseconds kBusyWindow{1000};

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
  /// `executor`, and what they lead to follows in the incident effects.
  void asyncSample(const ProcessIdentity& process, Executor executor, SampleDone done);

  /// Cancels the sample of `process` in flight (past its deadline): it completes now, counted as
  /// cancelled; the platform's work for it is left to end on its own.
  void cancelSample(const ProcessIdentity& process);

  /// A symptom of a hang seen from outside holds (a probe failed enough times, a service stays
  /// pending, a window does not answer): unless its incident is open or being opened, every
  /// thread of its process is analysed on `executor` through a session of its own, and the
  /// incident opens with those chains, its evidence and dump as for any incident. The process
  /// need not be watched (the process of a service).
  void raiseSymptom(Symptom symptom, Executor executor);

  /// The symptom no longer holds: its incident, if open, resolves with `resolution`.
  void clearSymptom(IncidentKind kind, const std::string& key, const std::string& resolution);

  /// Whether the incident of a symptom is open, or its process is being analysed to open it:
  /// a watcher whose symptom went away while it was raised clears it again until this is false.
  [[nodiscard]] bool symptomHeld(IncidentKind kind, const std::string& key) const;

  /// Installs a new configuration (the capture settings); targets come from the registry, whose
  /// change the next discovery applies.
  void reconfigure(Config config);

  [[nodiscard]] std::vector<WatchedProcess> watched() const;
  [[nodiscard]] std::optional<WatchedProcess> watchedProcess(const ProcessIdentity& process) const;
  /// The sampling interval of a watched process (cheaper than watchedProcess()).
  [[nodiscard]] std::optional<std::chrono::milliseconds> intervalOf(
      const ProcessIdentity& process) const;
  /// The counters; never waits for the decision lock.
  [[nodiscard]] MonitorStats stats() const;
  /// How many processes each target watches now, by target name: every target of the
  /// registry (zeros included) and any other that still watches one; never waits for the
  /// decision lock.
  [[nodiscard]] std::map<std::string, std::size_t> watchedByTarget() const;
  [[nodiscard]] Config config() const;

  /// Takes the incidents the store holds open (those open when the service stopped) as open:
  /// they go on or resolve with the samples, and those of processes that are no longer there
  /// resolve at the first discovery. Used at start.
  void adoptStoredIncidents();

 private:
  /// Decides what `events` lead to and hands it to the effects; called with the lock held.
  /// `threads` are those of the sample the events come from, if any.
  void handle(std::vector<IncidentEvent> events, std::span<const ThreadSample> threads = {})
      WCTMON_REQUIRES(mutex_);
  [[nodiscard]] bool shouldCapture(const Incident& incident) WCTMON_REQUIRES(mutex_);
  /// Whether an incident of `kind` gets a dump of its process (capture.dump).
  [[nodiscard]] bool wantsDump(IncidentKind kind) const WCTMON_REQUIRES(mutex_);
  /// Takes one finished analysis of `process`, begun at `started`, into the tracker and queues
  /// what follows; returns whether the process is still watched. `others_left_out`: the sample
  /// did not follow chains into other processes (IncidentTracker::leadsElsewhere).
  [[nodiscard]] bool takeSample(const ProcessIdentity& process,
                                std::shared_ptr<const TargetConfig> target,
                                Result<Analysis> analysis, Clock::SteadyTimePoint started,
                                bool others_left_out, const Executor& executor)
      WCTMON_EXCLUDES(mutex_);
  /// Takes the profile of a busy thread: a busy incident when it spins in place.
  void takeProfile(const ProcessIdentity& process, ThreadRef thread, std::string thread_name,
                   std::shared_ptr<const TargetConfig> target, Result<ThreadProfile> profile,
                   const Executor& executor) WCTMON_EXCLUDES(mutex_);
  /// Takes the analysis of a symptom's process into the tracker: its incident opens.
  void takeSymptom(const Symptom& symptom, const ProcessInfo& process,
                   std::shared_ptr<const TargetConfig> target, Result<Analysis> analysis)
      WCTMON_EXCLUDES(mutex_);
  /// The other processes whose threads the analysis's deadlocks name, as it or the catalog
  /// knows them; read outside the lock.
  [[nodiscard]] std::vector<IncidentProcess> peersOf(const ProcessIdentity& process,
                                                     const Analysis& analysis);
  /// Takes a process that is no longer watched out of the thread count; with the lock held.
  void forgetThreads(const WatchedProcess& process) WCTMON_REQUIRES(mutex_);
  /// Publishes how many processes are watched, in all and by target, after watched_ changed.
  void publishWatched() WCTMON_REQUIRES(mutex_);

  Dependencies deps_;
  WaitChainAnalyzer analyzer_;

  mutable Mutex mutex_;  // the decision lock
  Config config_ WCTMON_GUARDED_BY(mutex_);
  std::map<ProcessIdentity, WatchedProcess> watched_ WCTMON_GUARDED_BY(mutex_);
  TargetMatchMemo matches_ WCTMON_GUARDED_BY(mutex_);
  /// Ids are given where incidents are decided, so that no decision waits for the store; kept
  /// above the highest recorded.
  IncidentIds ids_;
  IncidentTracker tracker_ WCTMON_GUARDED_BY(mutex_);
  /// Signatures of symptoms whose process is being analysed to open their incident.
  std::set<std::string> raising_ WCTMON_GUARDED_BY(mutex_);
  /// Busy threads whose frames are being sampled, and when a busy thread was last found making
  /// progress (not sampled again before its target's busy threshold has passed once more).
  std::set<ThreadRef> profiling_ WCTMON_GUARDED_BY(mutex_);
  std::map<ThreadRef, Clock::SteadyTimePoint> progressing_ WCTMON_GUARDED_BY(mutex_);
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
    std::array<std::atomic<std::uint64_t>, kIncidentKindCount> opened_by_kind{};
    std::atomic<std::uint64_t> watched_threads{0};
    std::atomic<std::uint64_t> incidents_resolved{0};
    std::atomic<std::size_t> watched{0};
  };
  Counters counters_;
  /// The watched processes by target as publishWatched() last counted them: a lock of its own,
  /// held only to copy the map, so that a scrape never waits for a decision.
  mutable Mutex published_mutex_;
  std::map<std::string, std::size_t> watched_by_target_ WCTMON_GUARDED_BY(published_mutex_);
};

}  // namespace wctmon
