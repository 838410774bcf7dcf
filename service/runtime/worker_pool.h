#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/executor.h"

namespace wctmon {

/// The service's one execution context: a Boost.Asio io_context run by a pool of threads. The
/// platform's blocking work (a /proc read, a ptrace stop, an fsync) is posted through work()
/// and timed, so that the health check can tell workers stuck in it (a read stuck in the
/// kernel) from busy ones, and add a worker when every other one is stuck.
///
/// Shutdown: stop() lets work in flight end within a grace period, then stops the context and
/// joins; a worker stuck past the grace is left behind (detached) and dies with the process.
class WorkerPool {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  /// `threads` = 0: one per core.
  explicit WorkerPool(unsigned threads);

  /// A pool without threads, whose caller runs the context (context().poll()) when it wants the
  /// ready handlers run: tests that drive the scheduler with a fake clock.
  struct DrivenByCaller {};
  explicit WorkerPool(DrivenByCaller);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void start();
  /// Returns false when work was still running after `grace` and its workers were left behind.
  bool stop(std::chrono::milliseconds grace);

  [[nodiscard]] boost::asio::io_context& context() { return io_; }

  /// Posts blocking platform work to the pool, timed. A completion the work dispatches runs
  /// within it, and is timed with it.
  [[nodiscard]] Executor work();
  /// Runs on `strand` (completions of one process, in order); dispatches run at once on the
  /// worker that calls them when the strand is free.
  [[nodiscard]] static Executor on(const Strand& strand);

  /// Adds a worker, up to twice the base size (plus one).
  bool addWorker();
  /// Workers currently in work() tasks that started more than `longer_than` ago.
  [[nodiscard]] std::size_t stuckWorkers(std::chrono::milliseconds longer_than) const;
  [[nodiscard]] std::size_t threads() const;
  [[nodiscard]] std::size_t activeWork() const { return active_work_; }

 private:
  /// When each running work() task started; slots are reused.
  struct Running {
    std::chrono::steady_clock::time_point started;
    bool used = false;
  };
  std::size_t beginWork();
  void endWork(std::size_t slot);

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  unsigned base_threads_;
  std::atomic<std::size_t> active_work_{0};
  mutable std::mutex mutex_;
  std::vector<std::thread> threads_;
  std::vector<Running> running_;
};

}  // namespace wctmon
