// The pool's executors: posts never run inline; a dispatch from a worker onto a free strand runs
// at once on that worker, which is how a sample's result reaches its handler without a hand-off.
#include "runtime/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/strand.hpp>
#include <future>
#include <thread>

#include "core/completion.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;

/// Calls `run` (post or dispatch on a strand's executor) from a pool worker, and says whether
/// the task ran inline: on that worker, within the call.
bool ranInline(WorkerPool& pool, const std::function<void(Executor&, Task)>& run) {
  auto strand = boost::asio::make_strand(pool.context());
  auto executor = WorkerPool::on(strand);
  std::promise<bool> seen;
  pool.work()([&] {
    const auto caller = std::this_thread::get_id();
    auto in_call = std::make_shared<std::atomic<bool>>(true);
    auto done = std::make_shared<std::promise<bool>>();
    auto ran = done->get_future();
    run(executor, [caller, in_call, done] {
      done->set_value(std::this_thread::get_id() == caller && in_call->load());
    });
    in_call->store(false);
    seen.set_value(ran.get());
  });
  auto future = seen.get_future();
  EXPECT_EQ(future.wait_for(10s), std::future_status::ready);
  return future.get();
}

TEST(WorkerPool, ADispatchFromAWorkerOntoAFreeStrandRunsAtOnceOnThatWorker) {
  WorkerPool pool(2);
  pool.start();
  EXPECT_TRUE(ranInline(pool, [](Executor& e, Task t) { e.dispatch(std::move(t)); }));
  pool.stop(1s);
}

TEST(WorkerPool, APostNeverRunsInline) {
  WorkerPool pool(2);
  pool.start();
  EXPECT_FALSE(ranInline(pool, [](Executor& e, Task t) { e.post(std::move(t)); }));
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
  EXPECT_TRUE(ranInline(pool, [](Executor& e, Task t) {
    auto completion = Completion<int>::make(e, [t = std::move(t)](Result<int>) { t(); });
    completion->completeFromWork(1);
  }));
  // Made within the call (a refusal, a cancellation): posted, even from a worker.
  EXPECT_FALSE(ranInline(pool, [](Executor& e, Task t) {
    auto completion = Completion<int>::make(e, [t = std::move(t)](Result<int>) { t(); });
    completion->complete(makeError(ErrorCode::kBusy, "busy"));
  }));
  pool.stop(1s);
}

}  // namespace
}  // namespace wctmon
