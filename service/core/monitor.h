#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/alert_rate_limiter.h"
#include "core/analyzer.h"
#include "core/config.h"
#include "core/incident_tracker.h"
#include "core/ports/alert_sink.h"
#include "core/ports/clock.h"
#include "core/ports/incident_repository.h"
#include "core/ports/process_catalog.h"
#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"
#include "core/target_matcher.h"

namespace wctmon {

/// A process the monitor watches, with the target that selected it.
struct WatchedProcess {
  ProcessInfo process;
  /// Shared: every sample reads it, nobody changes it in place (reconfiguring replaces it).
  std::shared_ptr<const TargetConfig> target;
  /// What the source keeps between samples of this process.
  std::shared_ptr<SampleCache> cache;
};

/// Counters the service reports about itself.
struct MonitorStats {
  std::uint64_t samples = 0;
  std::uint64_t sample_errors = 0;
  std::uint64_t incidents_opened = 0;
  std::uint64_t incidents_resolved = 0;
  std::uint64_t captures = 0;
  std::uint64_t store_errors = 0;
  std::uint64_t alerts_suppressed = 0;
  std::size_t watched = 0;
};

/// The service's decisions, independent of how they are scheduled: which processes to watch
/// (discovery), what one sample of a process means (incidents, evidence, records, alerts), and
/// the registered targets. Thread-safe: samples of different processes may run at once.
class Monitor {
 public:
  struct Dependencies {
    WaitChainSource& source;
    ThreadInspector* inspector;
    ProcessCatalog& catalog;
    IncidentRepository* store;  // nullptr: incidents are kept in memory only
    AlertSink* alerts;          // nullptr: no alerts
    const Clock& clock;
  };

  Monitor(Dependencies deps, Config config);

  /// What changed in the set of watched processes.
  struct Discovery {
    std::vector<WatchedProcess> added;
    std::vector<ProcessIdentity> removed;
  };

  /// Scans the processes: starts watching new matches, stops watching those that exited, were
  /// replaced (PID reuse) or no longer match; their open incidents resolve.
  [[nodiscard]] Discovery discover();

  /// Samples one watched process. Returns false when the process is gone (stop watching).
  [[nodiscard]] bool sample(const ProcessIdentity& process);

  /// Installs a new configuration (targets, thresholds); the next discovery applies it.
  void reconfigure(Config config);

  /// Adds or replaces a runtime target; persisted in the store.
  [[nodiscard]] Status addTarget(const TargetConfig& target);
  /// Removes a runtime target; false when there was none by that name.
  [[nodiscard]] Result<bool> removeTarget(const std::string& name);

  [[nodiscard]] std::vector<TargetConfig> targets() const;
  [[nodiscard]] std::vector<WatchedProcess> watched() const;
  [[nodiscard]] std::optional<WatchedProcess> watchedProcess(const ProcessIdentity& process) const;
  /// The sampling interval of a watched process (cheaper than watchedProcess()).
  [[nodiscard]] std::optional<std::chrono::milliseconds> intervalOf(
      const ProcessIdentity& process) const;
  [[nodiscard]] std::vector<Incident> openIncidents() const;
  [[nodiscard]] MonitorStats stats() const;
  [[nodiscard]] Config config() const;

  /// Applies the retention settings to the store.
  void applyRetention();

  /// Resolves every open incident of processes that are no longer there; used at start.
  void adoptStoredIncidents();

 private:
  void handle(std::vector<IncidentEvent> events);
  void captureEvidence(Incident& incident);
  void alert(const IncidentEvent& event);
  void rebuildMatcher();

  Dependencies deps_;
  WaitChainAnalyzer analyzer_;
  mutable std::mutex mutex_;
  Config config_;
  std::vector<TargetConfig> runtime_targets_;
  std::unique_ptr<TargetMatcher> matcher_;
  std::map<ProcessIdentity, WatchedProcess> watched_;
  IncidentTracker tracker_;
  AlertRateLimiter limiter_;
  std::map<ProcessIdentity, Clock::TimePoint> last_capture_;
  MonitorStats stats_;
};

}  // namespace wctmon
