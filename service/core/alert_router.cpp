#include "core/alert_router.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <thread>

namespace wctmon {

/// One sink's queue and the thread that delivers from it. The thread owns the worker with the
/// router: a worker stuck in its sink when the router goes outlives it safely.
class AlertRouter::Worker : public std::enable_shared_from_this<Worker> {
 public:
  explicit Worker(Route route) : route_(std::move(route)) {}

  void start() {
    thread_ = std::thread([self = shared_from_this()] { self->run(); });
  }

  void push(const Alert& alert, bool resumed = false) {
    {
      MutexLock lock(mutex_);
      if (stopping_) return;
      if (queue_.size() >= route_.queue_limit) {
        queue_.pop_front();
        ++stats_.dropped;
        ++done_;
      }
      queue_.push_back({alert, resumed});
      ++pushed_;
    }
    wake_.notify_all();
  }

  /// Waits until what was pushed so far is done, up to `deadline`.
  bool awaitDone(std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mutex_);
    const auto target = pushed_;
    return lock.waitUntil(done_cv_, deadline,
                          [&]() WCTMON_REQUIRES(mutex_) { return done_ >= target; });
  }

  /// Delivers what is queued, then ends its thread.
  void stop() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
  }

  /// Joins the thread once it has ended by `deadline`; otherwise leaves it to end on its own
  /// (it holds this worker) and counts what it will not deliver as dropped.
  void finish(std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mutex_);
    const bool ended =
        lock.waitUntil(done_cv_, deadline, [&]() WCTMON_REQUIRES(mutex_) { return ended_; });
    if (!ended) {
      stats_.dropped += queue_.size();
      queue_.clear();
      lock.unlock();
      thread_.detach();
      return;
    }
    lock.unlock();
    thread_.join();
  }

  [[nodiscard]] bool ended() const {
    MutexLock lock(mutex_);
    return ended_;
  }

  [[nodiscard]] SinkStats stats() const {
    MutexLock lock(mutex_);
    auto out = stats_;
    out.name = route_.name;
    out.queued = queue_.size();
    return out;
  }

 private:
  using SteadyClock = std::chrono::steady_clock;
  struct Queued {
    Alert alert;
    bool resumed;  // for the sink's resume(), not send()
  };

  void run() {
    const auto refresh_every = route_.sink->refreshInterval();
    auto next_refresh = SteadyClock::now() + refresh_every;
    MutexLock lock(mutex_);
    for (;;) {
      const auto ready = [&]() WCTMON_REQUIRES(mutex_) { return stopping_ || !queue_.empty(); };
      if (refresh_every > std::chrono::milliseconds::zero()) {
        lock.waitUntil(wake_, next_refresh, ready);
      } else {
        lock.wait(wake_, ready);
      }
      if (queue_.empty()) {
        if (stopping_) break;
        lock.unlock();
        const auto refreshed = route_.sink->refresh();
        lock.lock();
        if (!refreshed) stats_.last_error = refreshed.error().message;
        next_refresh = SteadyClock::now() + refresh_every;
        continue;
      }
      const Queued next = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      const auto sent = deliver(next);
      lock.lock();
      if (sent) {
        // A resumption most sinks take as nothing to do: not a delivery.
        if (!next.resumed) ++stats_.delivered;
      } else {
        ++stats_.failed;
        stats_.last_error = sent.error().message;
      }
      ++done_;
      done_cv_.notify_all();
    }
    ended_ = true;
    done_cv_.notify_all();
  }

  /// Sends `alert`, and again after a growing wait while the receiver may take it later, the
  /// route's retry time allows and the router is not stopping. Called without the lock: a sink
  /// may block.
  Status deliver(const Queued& next) WCTMON_EXCLUDES(mutex_) {
    const auto give_up = SteadyClock::now() + route_.retry_for;
    auto delay = kFirstRetryDelay;
    for (;;) {
      auto sent = next.resumed ? route_.sink->resume(next.alert) : route_.sink->send(next.alert);
      if (sent || sent.error().code != ErrorCode::kIo) return sent;
      const auto again = SteadyClock::now() + delay;
      if (again > give_up) return sent;
      MutexLock lock(mutex_);
      if (stopping_) return sent;
      ++stats_.retried;
      stats_.last_error = sent.error().message;
      if (lock.waitUntil(wake_, again, [&]() WCTMON_REQUIRES(mutex_) { return stopping_; })) {
        return sent;
      }
      delay = std::min(delay * 2, kMaxRetryDelay);
    }
  }

  const Route route_;
  mutable Mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  std::deque<Queued> queue_ WCTMON_GUARDED_BY(mutex_);
  /// Alerts pushed and alerts done with (delivered, failed or dropped from the front).
  std::uint64_t pushed_ WCTMON_GUARDED_BY(mutex_) = 0;
  std::uint64_t done_ WCTMON_GUARDED_BY(mutex_) = 0;
  bool stopping_ WCTMON_GUARDED_BY(mutex_) = false;
  bool ended_ WCTMON_GUARDED_BY(mutex_) = false;
  SinkStats stats_ WCTMON_GUARDED_BY(mutex_);
  std::thread thread_;
};

std::vector<std::shared_ptr<AlertRouter::Worker>> AlertRouter::startWorkers(
    std::vector<Route> routes) {
  std::vector<std::shared_ptr<Worker>> out;
  for (auto& r : routes) {
    auto worker = std::make_shared<Worker>(std::move(r));
    worker->start();
    out.push_back(std::move(worker));
  }
  return out;
}

AlertRouter::AlertRouter(std::vector<Route> routes) : workers_(startWorkers(std::move(routes))) {}

AlertRouter::~AlertRouter() {
  std::vector<std::shared_ptr<Worker>> all;
  {
    MutexLock lock(mutex_);
    all = std::move(workers_);
    all.insert(all.end(), retired_.begin(), retired_.end());
    retired_.clear();
  }
  for (const auto& w : all) w->stop();
  const auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
  for (const auto& w : all) w->finish(deadline);
}

Status AlertRouter::send(const Alert& alert) {
  MutexLock lock(mutex_);
  for (const auto& w : workers_) w->push(alert);
  return std::monostate{};
}

Status AlertRouter::resume(const Alert& alert) {
  MutexLock lock(mutex_);
  for (const auto& w : workers_) w->push(alert, true);
  return std::monostate{};
}

void AlertRouter::replaceRoutes(std::vector<Route> routes) {
  auto fresh = startWorkers(std::move(routes));
  std::vector<std::shared_ptr<Worker>> old;
  std::vector<std::shared_ptr<Worker>> drained;
  {
    MutexLock lock(mutex_);
    old = std::exchange(workers_, std::move(fresh));
    // Those replaced before that have delivered all they had are joined now.
    const auto at =
        std::partition(retired_.begin(), retired_.end(), [](const auto& w) { return !w->ended(); });
    drained.assign(at, retired_.end());
    retired_.erase(at, retired_.end());
    retired_.insert(retired_.end(), old.begin(), old.end());
  }
  for (const auto& w : old) w->stop();
  for (const auto& w : drained) w->finish(std::chrono::steady_clock::now());
}

bool AlertRouter::flush(std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Worker>> all;
  {
    MutexLock lock(mutex_);
    all = workers_;
    all.insert(all.end(), retired_.begin(), retired_.end());
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool done = true;
  for (const auto& w : all) done = w->awaitDone(deadline) && done;
  return done;
}

std::vector<AlertRouter::SinkStats> AlertRouter::stats() const {
  MutexLock lock(mutex_);
  std::vector<SinkStats> out;
  for (const auto& w : workers_) out.push_back(w->stats());
  return out;
}

}  // namespace wctmon
