#pragma once

// The definitions of BasicScheduler, for the instantiations: the service's
// (runtime/scheduler.cpp) and the tests' with a fake clock.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <thread>

#include "runtime/scheduler.h"

namespace wctmon {

namespace asio = boost::asio;

template <typename TimerClock>
BasicScheduler<TimerClock>::BasicScheduler(Monitor& monitor, WorkerPool& pool, Options options)
    : monitor_(monitor),
      pool_(pool),
      options_(std::move(options)),
      io_(pool.context()),
      discovery_timer_(io_),
      health_timer_(io_),
      retention_timer_(io_) {}

template <typename TimerClock>
BasicScheduler<TimerClock>::~BasicScheduler() {
  stop();
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::start() {
  {
    std::lock_guard lock(mutex_);
    last_health_check_ = TimerClock::now();
  }
  pool_.start();
  scheduleDiscovery(std::chrono::milliseconds(0));
  scheduleHealth();
  scheduleRetention(options_.retention_first);
  if (options_.watch_health_check) health_watch_ = std::thread([this] { watchHealthCheck(); });
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::watchHealthCheck() {
  bool said = false;
  std::unique_lock lock(health_watch_mutex_);
  while (!health_watch_wake_.wait_for(lock, options_.health_interval,
                                      [this] { return stopping_.load(); })) {
    lock.unlock();
    if (checkStalled()) {
      // A worker more runs the check and the other targets, up to the pool's most.
      if (pool_.addWorker()) {
        spdlog::warn(
            "no health check could run: every worker is stuck in platform work; added "
            "a worker");
      } else {
        if (!said) {
          spdlog::error("no health check can run: every worker is stuck in platform work");
          said = true;
        }
        if (options_.on_health) options_.on_health(false, stats());
      }
    } else {
      said = false;
    }
    lock.lock();
  }
}

template <typename TimerClock>
std::chrono::milliseconds BasicScheduler<TimerClock>::stuckAfter() const {
  return options_.deadline.count() > 0 ? options_.deadline : std::chrono::milliseconds(1000);
}

template <typename TimerClock>
bool BasicScheduler<TimerClock>::checkStalled() const {
  std::chrono::milliseconds deadline;
  typename TimerClock::time_point last;
  {
    std::lock_guard lock(mutex_);
    deadline = stuckAfter();
    last = last_health_check_;
  }
  // Not merely late (a backlog of samples): no check for three intervals, and every worker in
  // platform work past the deadline.
  return !stopping_ && last != typename TimerClock::time_point{} &&
         TimerClock::now() - last > 3 * options_.health_interval &&
         pool_.stuckWorkers(deadline) >= pool_.threads();
}

template <typename TimerClock>
bool BasicScheduler<TimerClock>::stop() {
  if (stopping_.exchange(true)) return true;
  if (health_watch_.joinable()) {
    {
      std::lock_guard lock(health_watch_mutex_);  // the watch sees stopping_ or is woken
    }
    health_watch_wake_.notify_all();
    health_watch_.join();
  }
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, job] : jobs_) {
      job->stopped = true;
      job->timer.cancel();
    }
  }
  asio::post(io_, [this] {
    discovery_timer_.cancel();
    health_timer_.cancel();
    retention_timer_.cancel();
  });
  // Samples in flight and the side effects they decided (a capture, a store write, an alert)
  // finish within the grace period; one stuck in the kernel does not hold the service hostage.
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdown_grace;
  while ((active_samples_ > 0 || monitor_.stats().pending_effects > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (!pool_.stop(std::max(left, std::chrono::milliseconds(0))) || active_samples_ > 0) {
    spdlog::warn("{} sample(s) still running at shutdown; leaving them behind",
                 active_samples_.load());
    return false;
  }
  return true;
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::setOptions(std::chrono::milliseconds discovery_interval,
                                            std::chrono::milliseconds deadline) {
  std::lock_guard lock(mutex_);
  options_.discovery_interval = discovery_interval;
  options_.deadline = deadline;
}

template <typename TimerClock>
SchedulerStats BasicScheduler<TimerClock>::stats() const {
  const bool stalled = checkStalled();
  const auto threads = pool_.threads();
  std::lock_guard lock(mutex_);
  auto s = stats_;
  if (stalled) s.healthy = false;  // the check itself cannot run
  s.jobs = jobs_.size();
  s.threads = threads;
  if (p99_stale_ && !recent_.empty()) {
    // Once per new sample at most, however often status is asked (dashboards ask a lot).
    auto sorted = recent_;
    // The nearest rank: of fewer than 100 samples, the slowest.
    const auto rank = (sorted.size() * 99 + 99) / 100;
    const auto at = sorted.begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(sorted.begin(), at, sorted.end());
    p99_ = *at;
    p99_stale_ = false;
  }
  s.p99_sample = p99_;
  return s;
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::scheduleDiscovery(std::chrono::milliseconds delay) {
  if (stopping_) return;
  discovery_timer_.expires_after(delay);
  discovery_timer_.async_wait([this](const boost::system::error_code& ec) {
    // A cancelled timer that had already expired still delivers success: check the flag too.
    if (ec || stopping_) return;
    discover();
    std::chrono::milliseconds interval;
    {
      std::lock_guard lock(mutex_);
      interval = options_.discovery_interval;
    }
    scheduleDiscovery(interval);
  });
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::discover() {
  const auto changes = monitor_.discover();
  for (const auto& id : changes.removed) removeJob(id);
  for (const auto& w : changes.added) addJob(w.process.identity, w.target->name);
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::addJob(const ProcessIdentity& process, const std::string& target) {
  auto job = std::make_shared<Job>(io_, process, target);
  {
    std::lock_guard lock(mutex_);
    if (jobs_.contains(process)) return;
    jobs_.emplace(process, job);
  }
  arm(job, std::chrono::milliseconds(0));  // a new process is sampled at once
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::removeJob(const ProcessIdentity& process) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(process);
  if (it == jobs_.end()) return;
  it->second->stopped = true;
  it->second->timer.cancel();
  jobs_.erase(it);
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::arm(const std::shared_ptr<Job>& job,
                                     std::chrono::milliseconds delay) {
  if (job->stopped || stopping_) return;
  job->timer.expires_after(delay);
  job->timer.async_wait([this, job](const boost::system::error_code& ec) {
    if (ec || job->stopped || stopping_) return;
    tick(job);
  });
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::tick(const std::shared_ptr<Job>& job) {
  // Fixed rate: the next turn is set before this one runs.
  const auto interval = monitor_.intervalOf(job->process).value_or(std::chrono::milliseconds(1000));
  arm(job, interval);
  if (job->running.exchange(true)) {
    std::lock_guard lock(mutex_);
    ++stats_.samples_skipped;
    return;
  }
  asio::post(job->strand, [this, job, interval] { runSample(job, interval); });
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::runSample(const std::shared_ptr<Job>& job,
                                           std::chrono::milliseconds interval) {
  if (job->stopped || stopping_) {
    job->running = false;
    return;
  }
  ++active_samples_;
  // Past its deadline the sample is cancelled by the health check (checkHealth): its
  // completion comes at once, and no worker waits for the platform. One timer for all jobs
  // rather than one per sample: the steady state samples hundreds of processes a second.
  {
    std::lock_guard lock(mutex_);
    ++stats_.samples_started;
    job->begun = true;
    job->started = TimerClock::now();
    job->deadline = options_.deadline.count() > 0 ? options_.deadline : interval;
    job->cancelled = false;
  }
  monitor_.asyncSample(job->process, WorkerPool::on(job->strand),
                       [this, job](bool alive) { sampleDone(job, alive); });
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::sampleDone(const std::shared_ptr<Job>& job, bool alive) {
  std::chrono::microseconds took{0};
  {
    std::lock_guard lock(mutex_);
    took = std::chrono::duration_cast<std::chrono::microseconds>(TimerClock::now() - job->started);
    job->begun = false;
    stats_.last_sample = took;
    if (recent_.size() < kRecentSamples) {
      recent_.push_back(took);
    } else {
      recent_[next_recent_] = took;
      next_recent_ = (next_recent_ + 1) % kRecentSamples;
    }
    p99_stale_ = true;
  }
  if (options_.on_sample) options_.on_sample(took);
  job->running = false;
  --active_samples_;
  if (!alive) {
    asio::post(io_, [this, id = job->process] { removeJob(id); });
  }
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::scheduleHealth() {
  if (stopping_) return;
  health_timer_.expires_after(options_.health_interval);
  health_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    checkHealth();
    scheduleHealth();
  });
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::checkHealth() {
  std::chrono::milliseconds deadline;
  // With the throttle of its target's lines: one a minute per target, as a target whose samples
  // keep running late (a process too large for its interval, a loaded machine) would otherwise
  // write one per sample.
  std::vector<std::pair<std::shared_ptr<Job>, LogThrottle*>> overdue;
  {
    std::lock_guard lock(mutex_);
    deadline = stuckAfter();
    const auto now = TimerClock::now();
    for (const auto& [id, job] : jobs_) {
      // A turn still queued has the previous sample's start time: it is not late (it was taken
      // for one, and cancelled, when a thousand turns came due at once).
      if (!job->running || !job->begun || job->cancelled || now - job->started <= job->deadline) {
        continue;
      }
      job->cancelled = true;
      ++stats_.samples_overdue;
      overdue.emplace_back(
          job, &overdue_logs_.try_emplace(job->target, kOverdueLogInterval).first->second);
    }
  }
  for (const auto& [job, throttle] : overdue) {
    if (const auto others = throttle->admit()) {
      spdlog::warn(
          "sample of pid {} (target \"{}\") has run past its {} ms deadline; cancelled{}",
          job->process.pid.value, job->target, job->deadline.count(),
          LogThrottle::heldBack(*others, "more of this target's since the last such line"));
    }
    monitor_.cancelSample(job->process);
  }
  // Nothing here waits on the monitor's decisions or on a sample: only the pool's own record
  // of work that has run longer than a deadline.
  const std::size_t stuck = pool_.stuckWorkers(deadline);
  std::size_t threads = pool_.threads();
  // This handler runs on a worker, so at least one is free; when the others are all stuck in
  // platform work, one more keeps the rest of the targets moving.
  if (stuck > 0 && stuck + 1 >= threads && pool_.addWorker()) {
    spdlog::warn("{} worker(s) stuck in platform work; added a worker", stuck);
    threads = pool_.threads();
  }
  const bool healthy = stuck == 0 || stuck < threads;
  {
    std::lock_guard lock(mutex_);
    stats_.healthy = healthy;
    last_health_check_ = TimerClock::now();
  }
  if (options_.on_health) options_.on_health(healthy, stats());
}

template <typename TimerClock>
void BasicScheduler<TimerClock>::scheduleRetention(std::chrono::milliseconds after) {
  if (stopping_ || !options_.retention) return;
  retention_timer_.expires_after(after);
  retention_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    options_.retention();
    scheduleRetention(options_.retention_interval);
  });
}

}  // namespace wctmon
