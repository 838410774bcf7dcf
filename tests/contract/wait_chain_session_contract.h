// The contract of WaitChainSession (core/ports/wait_chain_source.h, core/completion.h) as one
// typed suite, instantiated for every implementation: the Linux source on a real process, the WCT
// source on a scripted WCT, and the fake the core's tests use. Each instantiation supplies a
// harness (SessionHarness below) that opens sessions and can hold an operation's work back.
//
// Completions land in a CompletionLog: its executor runs a dispatched completion at once, on
// whatever thread dispatches it (as a strand held by nobody would), and queues a posted one for
// the test's thread. A completion that runs on the thread that started the operation while the
// starting call is still on its stack is a breach of the contract, whichever way it came.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <concepts>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.h"
#include "core/ports/wait_chain_source.h"

namespace wctmon::testing {

/// What a suite needs of an implementation.
template <typename H>
concept SessionHarness = requires(H& h) {
  /// A session on a live subject process, whose samples succeed.
  { h.openLive() } -> std::same_as<std::unique_ptr<WaitChainSession>>;
  /// The subject's pid: first in every snapshot of a session from openLive().
  { h.livePid() } -> std::same_as<Pid>;
  /// A session on a process that has exited.
  { h.openExited() } -> std::same_as<std::unique_ptr<WaitChainSession>>;
  /// Samples started from now on do not end until releaseWork(): a read stuck in the kernel, a
  /// WCT request not answered yet.
  h.holdWork();
  /// Lets the held samples end, and later ones end at once.
  h.releaseWork();
  /// Whether an operation's result comes from work on a worker (dispatched), rather than from
  /// within the initiating call or the test's own thread (posted).
  { H::kResultsFromWork } -> std::convertible_to<bool>;
  /// Whether a cancelled operation leaves the platform working until releaseWork() (the session
  /// stays busy until then), rather than the cancel itself ending the platform's work.
  { H::kCancelLeavesWorkBehind } -> std::convertible_to<bool>;
};

/// One completion as the suite saw it.
struct Delivery {
  /// The error it carried; nullopt for a result.
  std::optional<ErrorCode> error;
  std::string message{};
  /// It ran on the thread that started the operation, inside the starting call.
  bool inside_call = false;
  /// It came through Executor::dispatch rather than post.
  bool dispatched = false;
  /// The snapshot of a sample that succeeded.
  std::optional<Snapshot> snapshot{};
  /// The threads of a re-read that succeeded.
  std::optional<std::vector<ThreadSample>> threads{};
};

/// Where the completions of a test land, named by the operation that each belongs to.
class CompletionLog {
 public:
  /// Dispatched tasks run at once, on the dispatching thread; posted ones wait for wait().
  [[nodiscard]] Executor executor() {
    return Executor::dispatching([this](Task task, bool may_run_inline) {
      if (may_run_inline) {
        const bool outer = dispatching_;
        dispatching_ = true;
        task();
        dispatching_ = outer;
        return;
      }
      std::lock_guard lock(mutex_);
      posted_.push_back(std::move(task));
      changed_.notify_all();
    });
  }

  /// Runs `start` (which starts an operation) marked as a starting call.
  template <typename F>
  void call(F&& start) {
    in_call_ = true;
    std::forward<F>(start)();
    in_call_ = false;
  }

  [[nodiscard]] WaitChainSession::SampleHandler sample(std::string name) {
    return [this, name = std::move(name)](Result<Snapshot> result) {
      Delivery d = delivery(result);
      if (result) d.snapshot = std::move(*result);
      record(name, std::move(d));
    };
  }

  [[nodiscard]] WaitChainSession::ThreadsHandler resample(std::string name) {
    return [this, name = std::move(name)](Result<std::vector<ThreadSample>> result) {
      Delivery d = delivery(result);
      if (result) d.threads = std::move(*result);
      record(name, std::move(d));
    };
  }

  /// Runs posted completions on this thread until `name` has `count` deliveries, at most
  /// `timeout`; true when it has.
  bool waitFor(const std::string& name, std::size_t count,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      runPosted();
      std::unique_lock lock(mutex_);
      if (deliveries_[name].size() >= count) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(5),
                        [&] { return !posted_.empty() || deliveries_[name].size() >= count; });
    }
  }

  /// Runs posted completions for `period`: what arrives late arrives within it.
  void settle(std::chrono::milliseconds period = std::chrono::milliseconds(150)) {
    const auto deadline = std::chrono::steady_clock::now() + period;
    while (std::chrono::steady_clock::now() < deadline) {
      runPosted();
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(5), [&] { return !posted_.empty(); });
    }
    runPosted();
  }

  [[nodiscard]] std::vector<Delivery> of(const std::string& name) {
    std::lock_guard lock(mutex_);
    return deliveries_[name];
  }

 private:
  template <typename T>
  static Delivery delivery(const Result<T>& result) {
    Delivery d;
    if (!result) {
      d.error = result.error().code;
      d.message = result.error().message;
    }
    d.inside_call = in_call_;
    d.dispatched = dispatching_;
    return d;
  }

  void record(const std::string& name, Delivery d) {
    std::lock_guard lock(mutex_);
    deliveries_[name].push_back(std::move(d));
    changed_.notify_all();
  }

  void runPosted() {
    for (;;) {
      Task task;
      {
        std::lock_guard lock(mutex_);
        if (posted_.empty()) return;
        task = std::move(posted_.front());
        posted_.pop_front();
      }
      task();
    }
  }

  // Per thread: only the starting thread is ever inside its starting call.
  static inline thread_local bool in_call_ = false;
  static inline thread_local bool dispatching_ = false;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Task> posted_;
  std::map<std::string, std::vector<Delivery>> deliveries_;
};

template <SessionHarness H>
class WaitChainSessionContract : public ::testing::Test {
 protected:
  /// Starts a sample on `session`, recorded as `name`.
  void sample(WaitChainSession& session, const std::string& name) {
    log_.call([&] { session.asyncSample({}, log_.executor(), log_.sample(name)); });
  }

  void resample(WaitChainSession& session, std::vector<ThreadRef> threads,
                const std::string& name) {
    log_.call(
        [&] { session.asyncResample(std::move(threads), log_.executor(), log_.resample(name)); });
  }

  /// The one delivery of `name`, after waiting for it and for any second one.
  Delivery only(const std::string& name) {
    EXPECT_TRUE(log_.waitFor(name, 1)) << name << " never completed";
    log_.settle();
    auto all = log_.of(name);
    EXPECT_EQ(all.size(), 1U) << name << " completed " << all.size() << " times";
    if (all.empty()) return Delivery{.error = ErrorCode::kInternal, .message = "never completed"};
    EXPECT_FALSE(all[0].inside_call) << name << " completed inside the call that started it";
    return all[0];
  }

  /// Samples until the session is no longer busy with an earlier operation, at most a few
  /// seconds; the last attempt's delivery.
  Delivery sampleWhenFree(WaitChainSession& session, const std::string& name) {
    Delivery d;
    for (int attempt = 0; attempt < 200; ++attempt) {
      const std::string this_name = name + "#" + std::to_string(attempt);
      sample(session, this_name);
      d = only(this_name);
      if (d.error != ErrorCode::kBusy) return d;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return d;
  }

  // Declared first, so that it outlives the harness's threads, which may still complete to it.
  CompletionLog log_;
  H harness_;
};

TYPED_TEST_SUITE_P(WaitChainSessionContract);

TYPED_TEST_P(WaitChainSessionContract, ASampleAndAReReadEachCompleteExactlyOnce) {
  auto session = this->harness_.openLive();
  this->sample(*session, "sample");
  const auto s = this->only("sample");
  ASSERT_FALSE(s.error) << s.message;
  ASSERT_FALSE(s.snapshot->processes.empty());
  const auto& process = s.snapshot->processes.front();
  EXPECT_EQ(process.pid, this->harness_.livePid());
  ASSERT_FALSE(process.threads.empty());

  std::vector<ThreadRef> threads;
  for (const auto& t : process.threads) threads.push_back(t.id);
  this->resample(*session, threads, "re-read");
  const auto r = this->only("re-read");
  ASSERT_FALSE(r.error) << r.message;
  EXPECT_EQ(r.threads->size(), threads.size());
}

TYPED_TEST_P(WaitChainSessionContract, AResultIsDispatchedFromTheWorkAndPostedFromTheCall) {
  auto session = this->harness_.openLive();
  this->sample(*session, "sample");
  const auto s = this->only("sample");
  ASSERT_FALSE(s.error) << s.message;
  // From a worker, dispatch lets the handler run where the result is; a result made within the
  // initiating call (or on the test's thread) is posted, and so never runs inside that call.
  EXPECT_EQ(s.dispatched, TypeParam::kResultsFromWork);
}

TYPED_TEST_P(WaitChainSessionContract, ASecondOperationWhileOneIsOutstandingIsRefusedAsBusy) {
  auto session = this->harness_.openLive();
  this->harness_.holdWork();
  this->sample(*session, "first");
  this->sample(*session, "second sample");
  const auto refused = this->only("second sample");
  EXPECT_EQ(refused.error, ErrorCode::kBusy) << refused.message;
  EXPECT_FALSE(refused.dispatched) << "a refusal is made within the call: it is posted";
  this->resample(*session, {ThreadRef{this->harness_.livePid(), Tid{1}}}, "re-read");
  const auto refused_reread = this->only("re-read");
  EXPECT_EQ(refused_reread.error, ErrorCode::kBusy) << refused_reread.message;
  EXPECT_TRUE(this->log_.of("first").empty()) << "the held sample completed before its work";

  this->harness_.releaseWork();
  const auto first = this->only("first");
  EXPECT_FALSE(first.error) << first.message;
}

TYPED_TEST_P(WaitChainSessionContract, CancelCompletesTheOutstandingOperationOnceAndAtOnce) {
  auto session = this->harness_.openLive();
  this->harness_.holdWork();
  this->sample(*session, "held");
  this->log_.call([&] { session->cancel(); });
  // Without the platform: its work is still held.
  const auto cancelled = this->only("held");
  EXPECT_EQ(cancelled.error, ErrorCode::kCancelled) << cancelled.message;
  EXPECT_FALSE(cancelled.dispatched) << "a cancellation is made by the canceller: it is posted";
  if constexpr (TypeParam::kCancelLeavesWorkBehind) {
    this->sample(*session, "while the cancelled work runs");
    const auto busy = this->only("while the cancelled work runs");
    EXPECT_EQ(busy.error, ErrorCode::kBusy) << busy.message;
  }
  this->log_.call([&] { session->cancel(); });  // nothing in flight: nothing happens

  this->harness_.releaseWork();
  const auto next = this->sampleWhenFree(*session, "next");
  EXPECT_FALSE(next.error) << next.message;
  ASSERT_TRUE(next.snapshot);
  EXPECT_EQ(next.snapshot->processes.at(0).pid, this->harness_.livePid());
  // The cancelled work ended, and its result went nowhere.
  EXPECT_EQ(this->log_.of("held").size(), 1U);
}

TYPED_TEST_P(WaitChainSessionContract, DestroyingASessionCancelsItsOutstandingOperation) {
  auto session = this->harness_.openLive();
  this->harness_.holdWork();
  this->sample(*session, "held");
  this->log_.call([&] { session.reset(); });
  const auto cancelled = this->only("held");
  EXPECT_EQ(cancelled.error, ErrorCode::kCancelled) << cancelled.message;
  this->harness_.releaseWork();
  this->log_.settle();
  EXPECT_EQ(this->log_.of("held").size(), 1U);
}

TYPED_TEST_P(WaitChainSessionContract, ASampleOfAProcessThatExitedFailsWithNoSuchProcess) {
  auto session = this->harness_.openExited();
  this->sample(*session, "sample");
  const auto s = this->only("sample");
  EXPECT_EQ(s.error, ErrorCode::kNoSuchProcess) << s.message;
  // The failure ended the operation: the session takes the next one.
  this->sample(*session, "again");
  const auto again = this->only("again");
  EXPECT_EQ(again.error, ErrorCode::kNoSuchProcess) << again.message;
}

REGISTER_TYPED_TEST_SUITE_P(WaitChainSessionContract, ASampleAndAReReadEachCompleteExactlyOnce,
                            AResultIsDispatchedFromTheWorkAndPostedFromTheCall,
                            ASecondOperationWhileOneIsOutstandingIsRefusedAsBusy,
                            CancelCompletesTheOutstandingOperationOnceAndAtOnce,
                            DestroyingASessionCancelsItsOutstandingOperation,
                            ASampleOfAProcessThatExitedFailsWithNoSuchProcess);

}  // namespace wctmon::testing
