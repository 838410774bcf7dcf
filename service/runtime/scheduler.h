#pragma once

#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/log_throttle.h"
#include "core/monitor.h"
#include "runtime/worker_pool.h"

namespace wctmon {

/// What the scheduler counts about itself.
struct SchedulerStats {
  std::uint64_t samples_started = 0;
  std::uint64_t samples_skipped = 0;  // previous sample of the same process still running
  std::uint64_t samples_overdue = 0;  // ran past the deadline and were cancelled
  std::size_t jobs = 0;
  std::size_t threads = 0;
  /// How long a sample took from its start to its decisions: the last one, and the 99th
  /// percentile of the recent ones (kRecentSamples).
  std::chrono::microseconds last_sample{0};
  std::chrono::microseconds p99_sample{0};
  /// The last health check's verdict: not every worker stuck in the platform. False also when
  /// no check has run for three health intervals and every worker is stuck: the check runs on
  /// a worker, and then it cannot run at all.
  bool healthy = true;
};

/// Drives a Monitor on the service's worker pool: a steady timer per watched process at its
/// target's interval, each sample's completions on that process's strand, and a discovery
/// timer that adds and removes processes. A process whose previous sample still runs skips its
/// turn (counted), so nothing queues without bound. A sample past its deadline is cancelled (by
/// the health check, so within one health interval): its completion runs at once and the
/// process's next turn comes as usual, while the platform's work
/// for it (a read stuck in the kernel) is left to end on its own; when every worker but one is
/// stuck in such work, a worker is added (up to twice the pool) so that a stuck target cannot
/// stop the others.
///
/// Its timers run on `TimerClock` (std::chrono::steady_clock in the service; tests drive a
/// fake one and the pool's context by hand, so that no test waits for time to pass).
///
/// Shutdown order: stop() cancels every timer (an expired timer's handler sees the stopped
/// flag), lets running samples and the incident effects finish within a grace period,
/// then stops the pool.
template <typename TimerClock>
class BasicScheduler {
 public:
  struct Options {
    std::chrono::milliseconds discovery_interval{1000};
    /// 0 = each target's interval.
    std::chrono::milliseconds deadline{0};
    std::chrono::milliseconds health_interval{1000};
    std::chrono::milliseconds shutdown_grace{3000};
    /// Called retention_first after the start, then every retention_interval (the store's
    /// retention); none when empty. The first pass comes soon: a service restarted more often
    /// than the interval would otherwise never prune.
    std::function<void()> retention;
    std::chrono::milliseconds retention_first{std::chrono::minutes(1)};
    std::chrono::milliseconds retention_interval{std::chrono::hours(1)};
    /// Called from the health timer; `healthy` is false when every worker is stuck.
    std::function<void(bool healthy, const SchedulerStats&)> on_health;
    /// Called after each sample with how long it took (the metrics' histogram).
    std::function<void(std::chrono::microseconds)> on_sample;
    /// Watches the health check from a thread of its own (real time): when no check has run for
    /// three health intervals and every worker is stuck past the deadline, it adds a worker; when
    /// the pool has its most, it calls on_health(false) once per health interval, so that health
    /// checks of the API say so and the watchdog is not fed.
    bool watch_health_check = false;
  };

  BasicScheduler(Monitor& monitor, WorkerPool& pool, Options options);
  ~BasicScheduler();
  BasicScheduler(const BasicScheduler&) = delete;
  BasicScheduler& operator=(const BasicScheduler&) = delete;

  /// Starts the pool's workers and the timers.
  void start();
  /// Stops the timers and waits, up to the shutdown grace, for samples and their side effects;
  /// false when work was left behind still running (stuck in the platform): what it uses must
  /// then outlive the scheduler.
  bool stop();

  /// Applies new intervals and deadline (targets themselves come from the monitor).
  void setOptions(std::chrono::milliseconds discovery_interval, std::chrono::milliseconds deadline);

  [[nodiscard]] SchedulerStats stats() const;

 private:
  using Strand = WorkerPool::Strand;
  using Timer = boost::asio::basic_waitable_timer<TimerClock>;
  struct Job {
    Job(boost::asio::io_context& io, ProcessIdentity id, std::string target_name)
        : process(id),
          target(std::move(target_name)),
          strand(boost::asio::make_strand(io)),
          timer(io) {}
    ProcessIdentity process;
    std::string target;
    Strand strand;
    Timer timer;
    std::atomic<bool> running{false};
    std::atomic<bool> stopped{false};
    // The sample in flight (guarded by the scheduler's mutex): whether it has begun (a turn
    // waits in its strand's queue between its tick and its start), when it began, its deadline,
    // and whether it was cancelled already.
    bool begun = false;
    typename TimerClock::time_point started{};
    std::chrono::milliseconds deadline{0};
    bool cancelled = false;
  };

  void scheduleDiscovery(std::chrono::milliseconds delay);
  void discover();
  void addJob(const ProcessIdentity& process, const std::string& target);
  void removeJob(const ProcessIdentity& process);
  void arm(const std::shared_ptr<Job>& job, std::chrono::milliseconds delay);
  void tick(const std::shared_ptr<Job>& job);
  /// Starts a sample of a job whose interval is `interval` (its deadline unless one is set).
  void runSample(const std::shared_ptr<Job>& job, std::chrono::milliseconds interval);
  void sampleDone(const std::shared_ptr<Job>& job, bool alive);
  void scheduleHealth();
  void checkHealth();
  void watchHealthCheck();
  /// Whether the health check cannot run: none for three health intervals, and every worker
  /// in platform work past the deadline.
  [[nodiscard]] bool checkStalled() const;
  /// How long platform work runs before its worker counts as stuck: the sample deadline, or 1 s
  /// without one. Called with mutex_ held.
  [[nodiscard]] std::chrono::milliseconds stuckAfter() const;
  void scheduleRetention(std::chrono::milliseconds after);

  Monitor& monitor_;
  WorkerPool& pool_;
  Options options_;
  boost::asio::io_context& io_;
  Timer discovery_timer_;
  Timer health_timer_;
  Timer retention_timer_;
  std::atomic<bool> stopping_{false};
  std::thread health_watch_;
  std::mutex health_watch_mutex_;
  std::condition_variable health_watch_wake_;
  std::atomic<int> active_samples_{0};

  /// How many recent sample durations the p99 is taken over.
  static constexpr std::size_t kRecentSamples = 1024;
  /// At most one "past its deadline" line per target in this long.
  static constexpr std::chrono::minutes kOverdueLogInterval{1};

  mutable std::mutex mutex_;
  std::map<ProcessIdentity, std::shared_ptr<Job>> jobs_;
  SchedulerStats stats_;
  /// The "past its deadline" lines of each target (the map guarded by mutex_; a throttle is
  /// thread-safe, and stays where it is once made).
  std::map<std::string, LogThrottle> overdue_logs_;
  /// When the health check last ran (guarded by mutex_).
  typename TimerClock::time_point last_health_check_{};
  /// The durations of the last kRecentSamples samples, a ring (guarded by mutex_).
  std::vector<std::chrono::microseconds> recent_;
  std::size_t next_recent_ = 0;
  /// Their 99th percentile as last computed, and whether a sample came since (mutex_).
  mutable std::chrono::microseconds p99_{0};
  mutable bool p99_stale_ = false;
};

/// The service's scheduler.
using Scheduler = BasicScheduler<std::chrono::steady_clock>;
extern template class BasicScheduler<std::chrono::steady_clock>;

}  // namespace wctmon
