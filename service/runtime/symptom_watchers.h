#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/executor.h"
#include "core/hung_window_tracker.h"
#include "core/monitor.h"
#include "core/pending_service_tracker.h"
#include "core/ports/clock.h"
#include "core/ports/service_status_source.h"
#include "core/ports/window_prober.h"

namespace wctmon {

/// What the symptom watchers take from the configuration; replaced at each reload.
struct SymptomWatchSettings {
  /// Which services are watched (services.watch) and their no-hint wait.
  PendingServiceRules services;
  /// services.interval_ms.
  std::chrono::milliseconds service_interval{1000};
  /// detection.window_hung_ms; 0: windows are not probed.
  std::chrono::milliseconds window_threshold = HungWindowTracker::kDefaultThreshold;
  /// How often the windows are probed: sampling.interval_ms.
  std::chrono::milliseconds window_interval{1000};

  /// The settings `config` gives.
  [[nodiscard]] static SymptomWatchSettings from(const Config& config);
};

/// Watches for the hangs that are seen from outside a process on the platform's own terms, and
/// turns them into the monitor's symptoms: services stuck in a pending state (the service
/// control manager, read every services.interval_ms) and top-level windows of watched processes
/// that stop answering messages (probed every sampling.interval_ms). Each holds while its
/// tracker reports it: raised at every poll (the monitor opens its incident once, with every
/// thread's chain of the process) and cleared at the first poll that no longer reports it.
///
/// Each watch runs its own timer on one strand of the service's context, with one poll in
/// flight at a time; the platform's reads (one SCM enumeration, a SendMessageTimeout per window
/// that may wait a second) run on the pool's blocking-work executor, never on the strand. A
/// watch whose platform piece is missing (nullptr: Linux has neither) does not run.
class SymptomWatchers {
 public:
  struct Dependencies {
    Monitor& monitor;
    /// nullptr: no services to watch here.
    ServiceStatusSource* services;
    /// nullptr: no windows to probe here.
    WindowProber* windows;
    const Clock& clock;
    boost::asio::io_context& io;
    /// Where the platform's blocking reads run (WorkerPool::work()).
    Executor work;
    /// Where a raised symptom's analysis runs its completions.
    Executor analysis;
  };

  SymptomWatchers(Dependencies deps, const Config& config);
  ~SymptomWatchers();
  SymptomWatchers(const SymptomWatchers&) = delete;
  SymptomWatchers& operator=(const SymptomWatchers&) = delete;

  /// Starts the watches this platform has; says once when the configuration asks for one it
  /// does not have.
  void start();
  /// Takes the services watched, the intervals and the window threshold of a reloaded
  /// configuration; the next poll of each watch uses them.
  void reconfigure(const Config& config);
  /// Stops the timers and waits for a poll in flight to end; false when one did not within
  /// kStopWait: what it uses must then outlive the watchers.
  bool stop();

  /// How long stop() waits for a poll in flight: a poll probes windows one after another, each
  /// silent one for a second.
  static constexpr std::chrono::milliseconds kStopWait{5000};

 private:
  struct Watch;
  struct Poll;
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  [[nodiscard]] SymptomWatchSettings settings() const;
  void arm(const std::shared_ptr<Watch>& watch, std::chrono::milliseconds delay);
  void run(const std::shared_ptr<Watch>& watch);
  void take(Watch& watch, Poll poll);
  /// One reading of the services (on the work executor).
  [[nodiscard]] Poll pollServices(const SymptomWatchSettings& settings);
  /// One probe of the windows of the watched processes (on the work executor).
  [[nodiscard]] Poll pollWindows(const SymptomWatchSettings& settings);

  Dependencies deps_;
  Strand strand_;
  /// Used only by the poll in flight of their watch: one at a time.
  PendingServiceTracker service_tracker_;
  HungWindowTracker window_tracker_;
  std::vector<std::shared_ptr<Watch>> watches_;  // made at start, on the caller's thread
  bool stopped_ = false;                         // on the strand

  mutable std::mutex mutex_;
  SymptomWatchSettings settings_;
  std::size_t in_flight_ = 0;
  std::condition_variable ended_;
};

}  // namespace wctmon
