#include "runtime/scheduler.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

namespace wctmon {

namespace asio = boost::asio;

Scheduler::Scheduler(Monitor& monitor, Options options)
    : monitor_(monitor),
      options_(std::move(options)),
      work_(asio::make_work_guard(io_)),
      discovery_timer_(io_),
      health_timer_(io_),
      retention_timer_(io_) {
  base_threads_ =
      options_.threads != 0 ? options_.threads : std::max(1U, std::thread::hardware_concurrency());
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::start() {
  for (unsigned i = 0; i < base_threads_; ++i) addWorker();
  scheduleDiscovery(std::chrono::milliseconds(0));
  scheduleHealth();
  scheduleRetention();
}

void Scheduler::addWorker() {
  std::lock_guard lock(mutex_);
  threads_.emplace_back([this] { io_.run(); });
  stats_.threads = threads_.size();
}

void Scheduler::stop() {
  if (stopping_.exchange(true)) return;
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
  work_.reset();
  // Samples in flight finish within the grace period; one stuck in the kernel does not hold the
  // service hostage: its thread is left behind and dies with the process.
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdown_grace;
  while (active_samples_ > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  io_.stop();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    threads.swap(threads_);
  }
  if (active_samples_ > 0) {
    spdlog::warn("{} sample(s) still running at shutdown; leaving them behind",
                 active_samples_.load());
    for (auto& t : threads) t.detach();
  } else {
    for (auto& t : threads) t.join();
  }
}

void Scheduler::setOptions(std::chrono::milliseconds discovery_interval,
                           std::chrono::milliseconds deadline) {
  std::lock_guard lock(mutex_);
  options_.discovery_interval = discovery_interval;
  options_.deadline = deadline;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  auto s = stats_;
  s.jobs = jobs_.size();
  return s;
}

void Scheduler::scheduleDiscovery(std::chrono::milliseconds delay) {
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

void Scheduler::discover() {
  const auto changes = monitor_.discover();
  for (const auto& id : changes.removed) removeJob(id);
  for (const auto& w : changes.added) addJob(w.process.identity);
}

void Scheduler::addJob(const ProcessIdentity& process) {
  auto job = std::make_shared<Job>(io_, process);
  {
    std::lock_guard lock(mutex_);
    if (jobs_.contains(process)) return;
    jobs_.emplace(process, job);
  }
  arm(job, std::chrono::milliseconds(0));  // a new process is sampled at once
}

void Scheduler::removeJob(const ProcessIdentity& process) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(process);
  if (it == jobs_.end()) return;
  it->second->stopped = true;
  it->second->timer.cancel();
  jobs_.erase(it);
}

std::chrono::milliseconds Scheduler::intervalOf(const ProcessIdentity& process) const {
  return monitor_.intervalOf(process).value_or(std::chrono::milliseconds(1000));
}

void Scheduler::arm(const std::shared_ptr<Job>& job, std::chrono::milliseconds delay) {
  if (job->stopped || stopping_) return;
  job->timer.expires_after(delay);
  job->timer.async_wait([this, job](const boost::system::error_code& ec) {
    if (ec || job->stopped || stopping_) return;
    tick(job);
  });
}

void Scheduler::tick(const std::shared_ptr<Job>& job) {
  // Fixed rate: the next turn is set before this one runs.
  arm(job, intervalOf(job->process));
  if (job->running.exchange(true)) {
    std::lock_guard lock(mutex_);
    ++stats_.samples_skipped;
    return;
  }
  asio::post(job->strand, [this, job] { runSample(job); });
}

void Scheduler::runSample(const std::shared_ptr<Job>& job) {
  if (job->stopped || stopping_) {
    job->running = false;
    return;
  }
  ++active_samples_;
  {
    std::lock_guard lock(mutex_);
    ++stats_.samples_started;
    job->started = std::chrono::steady_clock::now();
    job->overdue = false;
  }
  bool alive = true;
  try {
    alive = monitor_.sample(job->process);
  } catch (const std::exception& e) {
    spdlog::error("sampling pid {} threw: {}", job->process.pid.value, e.what());
  }
  --active_samples_;
  job->running = false;
  if (!alive) {
    asio::post(io_, [this, id = job->process] { removeJob(id); });
  }
}

void Scheduler::scheduleHealth() {
  if (stopping_) return;
  health_timer_.expires_after(options_.health_interval);
  health_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    checkHealth();
    scheduleHealth();
  });
}

void Scheduler::checkHealth() {
  const auto now = std::chrono::steady_clock::now();
  std::size_t stuck = 0;
  std::size_t threads = 0;
  SchedulerStats snapshot;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, job] : jobs_) {
      if (!job->running) continue;
      const auto deadline =
          options_.deadline.count() > 0 ? options_.deadline : intervalOf(job->process);
      if (now - job->started <= deadline) continue;
      ++stuck;
      if (!job->overdue.exchange(true)) {
        ++stats_.samples_overdue;
        spdlog::warn("sample of pid {} has run past its {} ms deadline", id.pid.value,
                     deadline.count());
      }
    }
    threads = threads_.size();
    snapshot = stats_;
    snapshot.jobs = jobs_.size();
  }
  // This handler runs on a worker, so at least one is free; when the others are all stuck in
  // overdue samples, one more keeps the rest of the targets moving.
  if (stuck > 0 && stuck + 1 >= threads && threads < 2 * base_threads_ + 1) {
    spdlog::warn("{} worker(s) stuck in overdue samples; adding a worker", stuck);
    addWorker();
  }
  const bool healthy = stuck < threads;
  if (options_.on_health) options_.on_health(healthy, snapshot);
}

void Scheduler::scheduleRetention() {
  if (stopping_) return;
  retention_timer_.expires_after(options_.retention_interval);
  retention_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    monitor_.applyRetention();
    scheduleRetention();
  });
}

}  // namespace wctmon
