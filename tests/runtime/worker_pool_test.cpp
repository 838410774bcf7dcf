// The pool's executors: posts never run inline; a dispatch from a worker onto a free strand runs
// at once on that worker, which is how a sample's result reaches its handler without a hand-off.
#include "runtime/worker_pool.h"

#include <gtest/gtest.h>

#include <boost/asio/strand.hpp>
#include <future>
#include <thread>

#include "core/completion.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;

struct Observed {
  bool ran_before_return = false;
  std::thread::id ran_on;
  std::thread::id called_from;
};

/// Calls `run` (post or dispatch on `strand`'s executor) from a pool worker, and reports whether
/// the task had run by the time the call returned and on which thread it ran.
Observed fromWorker(WorkerPool& pool, const std::function<void(Executor&, Task)>& run) {
  auto strand = boost::asio::make_strand(pool.context());
  auto executor = WorkerPool::on(strand);
  std::promise<Observed> seen;
  pool.work()([&] {
    auto observed = std::make_shared<Observed>();
    observed->called_from = std::this_thread::get_id();
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    run(executor, [observed, done] {
      observed->ran_on = std::this_thread::get_id();
      done->set_value();
    });
    observed->ran_before_return = finished.wait_for(0s) == std::future_status::ready;
    finished.wait();
    seen.set_value(*observed);
  });
  auto future = seen.get_future();
  EXPECT_EQ(future.wait_for(10s), std::future_status::ready);
  return future.get();
}

TEST(WorkerPool, ADispatchFromAWorkerOntoAFreeStrandRunsAtOnceOnThatWorker) {
  WorkerPool pool(2);
  pool.start();
  const auto seen = fromWorker(pool, [](Executor& e, Task t) { e.dispatch(std::move(t)); });
  EXPECT_TRUE(seen.ran_before_return);
  EXPECT_EQ(seen.ran_on, seen.called_from);
  pool.stop(1s);
}

TEST(WorkerPool, APostNeverRunsInline) {
  WorkerPool pool(2);
  pool.start();
  const auto seen = fromWorker(pool, [](Executor& e, Task t) { e.post(std::move(t)); });
  EXPECT_FALSE(seen.ran_before_return);
  pool.stop(1s);
}

TEST(WorkerPool, ADispatchFromAThreadOutsideThePoolIsPosted) {
  WorkerPool pool(1);
  pool.start();
  auto strand = boost::asio::make_strand(pool.context());
  std::promise<std::thread::id> ran_on;
  WorkerPool::on(strand).dispatch([&] { ran_on.set_value(std::this_thread::get_id()); });
  auto future = ran_on.get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  EXPECT_NE(future.get(), std::this_thread::get_id());
  pool.stop(1s);
}

TEST(WorkerPool, AResultFromWorkIsHandledOnTheWorkerAndARefusalIsPosted) {
  WorkerPool pool(2);
  pool.start();
  // From work: the handler runs before the worker's task returns.
  const auto from_work = fromWorker(pool, [](Executor& e, Task t) {
    auto completion = Completion<int>::make(e, [t = std::move(t)](Result<int>) { t(); });
    completion->completeFromWork(1);
  });
  EXPECT_TRUE(from_work.ran_before_return);
  // Made within the call (a refusal, a cancellation): posted, even from a worker.
  const auto refused = fromWorker(pool, [](Executor& e, Task t) {
    auto completion = Completion<int>::make(e, [t = std::move(t)](Result<int>) { t(); });
    completion->complete(makeError(ErrorCode::kBusy, "busy"));
  });
  EXPECT_FALSE(refused.ran_before_return);
  pool.stop(1s);
}

}  // namespace
}  // namespace wctmon
