#include "runtime/worker_pool.h"

#include <boost/asio/post.hpp>

namespace wctmon {

namespace asio = boost::asio;

WorkerPool::WorkerPool(unsigned threads)
    : guard_(asio::make_work_guard(io_)),
      base_threads_(threads != 0 ? threads : std::max(1U, std::thread::hardware_concurrency())) {}

WorkerPool::WorkerPool(DrivenByCaller) : guard_(asio::make_work_guard(io_)), base_threads_(0) {}

WorkerPool::~WorkerPool() { stop(std::chrono::milliseconds(0)); }

void WorkerPool::start() {
  for (unsigned i = 0; i < base_threads_; ++i) addWorker();
}

bool WorkerPool::addWorker() {
  std::lock_guard lock(mutex_);
  if (base_threads_ == 0 || threads_.size() >= 2 * base_threads_ + 1) return false;
  threads_.emplace_back([this] { io_.run(); });
  return true;
}

bool WorkerPool::stop(std::chrono::milliseconds grace) {
  guard_.reset();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (active_work_ > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  io_.stop();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    threads.swap(threads_);
  }
  const bool clean = active_work_ == 0;
  for (auto& t : threads) {
    if (clean) {
      t.join();
    } else {
      t.detach();
    }
  }
  return clean;
}

Executor WorkerPool::work() {
  return [this](Task task) {
    asio::post(io_, [this, task = std::move(task)] {
      const auto slot = beginWork();
      task();
      endWork(slot);
    });
  };
}

Executor WorkerPool::on(const Strand& strand) {
  return Executor::dispatching([strand](Task task, bool may_run_inline) {
    if (may_run_inline) {
      asio::dispatch(strand, std::move(task));
    } else {
      asio::post(strand, std::move(task));
    }
  });
}

std::size_t WorkerPool::beginWork() {
  ++active_work_;
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (!running_[i].used) {
      running_[i] = Running{std::chrono::steady_clock::now(), true};
      return i;
    }
  }
  running_.push_back(Running{std::chrono::steady_clock::now(), true});
  return running_.size() - 1;
}

void WorkerPool::endWork(std::size_t slot) {
  {
    std::lock_guard lock(mutex_);
    running_[slot].used = false;
  }
  --active_work_;
}

std::size_t WorkerPool::stuckWorkers(std::chrono::milliseconds longer_than) const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  std::size_t stuck = 0;
  for (const auto& r : running_) {
    if (r.used && now - r.started > longer_than) ++stuck;
  }
  return stuck;
}

std::size_t WorkerPool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

}  // namespace wctmon
