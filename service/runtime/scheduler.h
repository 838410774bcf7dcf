#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/monitor.h"

namespace wctmon {

/// What the scheduler counts about itself.
struct SchedulerStats {
  std::uint64_t samples_started = 0;
  std::uint64_t samples_skipped = 0;  // previous sample of the same process still running
  std::uint64_t samples_overdue = 0;  // ran past the deadline
  std::size_t jobs = 0;
  std::size_t threads = 0;
};

/// Drives a Monitor on one Boost.Asio execution context and a pool of threads: a steady timer
/// per watched process at its target's interval, each sample on that process's strand, and a
/// discovery timer that adds and removes processes. A process whose previous sample still runs
/// skips its turn (counted), so nothing queues without bound; a sample past its deadline is
/// reported, and when every worker is stuck in one, a worker is added (up to twice the pool) so
/// that a stuck target cannot stop the others.
///
/// Shutdown order: stop() cancels every timer (an expired timer's handler sees the stopped flag),
/// lets running samples finish within a grace period, then stops the context and joins.
class Scheduler {
 public:
  struct Options {
    unsigned threads = 0;  // 0 = one per core
    std::chrono::milliseconds discovery_interval{1000};
    /// 0 = each target's interval.
    std::chrono::milliseconds deadline{0};
    std::chrono::milliseconds health_interval{1000};
    std::chrono::milliseconds retention_interval{std::chrono::hours(1)};
    std::chrono::milliseconds shutdown_grace{3000};
    /// Called from the health timer; `healthy` is false when every worker is stuck.
    std::function<void(bool healthy, const SchedulerStats&)> on_health;
  };

  Scheduler(Monitor& monitor, Options options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void start();
  void stop();

  /// Applies new intervals and deadline (targets themselves come from the monitor).
  void setOptions(std::chrono::milliseconds discovery_interval, std::chrono::milliseconds deadline);

  [[nodiscard]] SchedulerStats stats() const;

 private:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  struct Job {
    Job(boost::asio::io_context& io, ProcessIdentity id)
        : process(id), strand(boost::asio::make_strand(io)), timer(io) {}
    ProcessIdentity process;
    Strand strand;
    boost::asio::steady_timer timer;
    std::atomic<bool> running{false};
    std::atomic<bool> stopped{false};
    std::atomic<bool> overdue{false};
    std::chrono::steady_clock::time_point started;
  };

  void scheduleDiscovery(std::chrono::milliseconds delay);
  void discover();
  void addJob(const ProcessIdentity& process);
  void removeJob(const ProcessIdentity& process);
  void arm(const std::shared_ptr<Job>& job, std::chrono::milliseconds delay);
  void tick(const std::shared_ptr<Job>& job);
  void runSample(const std::shared_ptr<Job>& job);
  void scheduleHealth();
  void checkHealth();
  void scheduleRetention();
  void addWorker();
  [[nodiscard]] std::chrono::milliseconds intervalOf(const ProcessIdentity& process) const;

  Monitor& monitor_;
  Options options_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::steady_timer discovery_timer_;
  boost::asio::steady_timer health_timer_;
  boost::asio::steady_timer retention_timer_;
  std::vector<std::thread> threads_;
  unsigned base_threads_ = 1;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_samples_{0};

  mutable std::mutex mutex_;
  std::map<ProcessIdentity, std::shared_ptr<Job>> jobs_;
  SchedulerStats stats_;
};

}  // namespace wctmon
