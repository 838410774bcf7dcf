#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/completion.h"
#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"

namespace wctmon::testing {

/// A wait-chain source that replays snapshots: the first for a sample, then one per resample.
/// Its sessions complete at once (posted to the caller's executor), unless the test holds
/// samples back with holdSamples() to play a sample that is still running.
class FakeWaitChainSource final : public WaitChainSource {
 public:
  void setSample(Result<Snapshot> s) {
    std::lock_guard lock(state_->mutex);
    state_->sample = std::move(s);
  }
  /// Each resample answers from the next queued snapshot (the last one repeats).
  void queueResample(Snapshot s) {
    std::lock_guard lock(state_->mutex);
    state_->resamples.push_back(std::move(s));
  }
  void clearResamples() {
    std::lock_guard lock(state_->mutex);
    state_->resamples.clear();
  }
  /// While held, samples do not complete; release() completes those held, in order.
  void holdSamples() {
    std::lock_guard lock(state_->mutex);
    state_->hold = true;
  }
  void release() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(state_->mutex);
      state_->hold = false;
      held.swap(state_->held);
    }
    for (auto& f : held) f();
  }

  Result<std::unique_ptr<WaitChainSession>> open(Pid pid) override {
    std::lock_guard lock(state_->mutex);
    ++state_->opened;
    return std::unique_ptr<WaitChainSession>(std::make_unique<Session>(state_, pid));
  }
  Result<std::unique_ptr<WaitChainSession>> openSystem() override { return open(Pid{0}); }
  [[nodiscard]] Availability availability() const override { return {"fake", true, {}}; }

  [[nodiscard]] int resampleCalls() const {
    std::lock_guard lock(state_->mutex);
    return state_->resample_calls;
  }
  [[nodiscard]] int sessionsOpened() const {
    std::lock_guard lock(state_->mutex);
    return state_->opened;
  }
  /// What the last sample asked for beyond its process.
  [[nodiscard]] SampleScope lastScope() const {
    std::lock_guard lock(state_->mutex);
    return state_->last_scope;
  }
  /// What waitTimes() answers, and what it was last asked.
  void setWaitTime(ThreadRef thread, std::chrono::milliseconds t) {
    std::lock_guard lock(state_->mutex);
    state_->wait_times[thread] = t;
  }
  [[nodiscard]] std::vector<ThreadRef> waitTimeRequests() const {
    std::lock_guard lock(state_->mutex);
    return state_->wait_time_requests;
  }

 private:
  struct State {
    mutable std::mutex mutex;
    Result<Snapshot> sample = Snapshot{};
    std::deque<Snapshot> resamples;
    bool hold = false;
    std::vector<std::function<void()>> held;
    int resample_calls = 0;
    int opened = 0;
    SampleScope last_scope;
    std::map<ThreadRef, std::chrono::milliseconds> wait_times;
    std::vector<ThreadRef> wait_time_requests;
  };

  class Session final : public WaitChainSession {
   public:
    Session(std::shared_ptr<State> state, Pid pid) : state_(std::move(state)), pid_(pid) {}
    ~Session() override { slot_->cancel(); }

    void asyncSample(SampleScope scope, Executor executor, SampleHandler done) override {
      auto completion = Completion<Snapshot>::make(std::move(executor), std::move(done));
      if (!beginOperation(*slot_, completion, "sample")) return;
      std::lock_guard lock(state_->mutex);
      state_->last_scope = scope;
      auto finish = [slot = slot_, completion, result = state_->sample]() mutable {
        slot->end();
        completion->complete(std::move(result));
      };
      if (state_->hold) {
        state_->held.push_back(std::move(finish));
      } else {
        finish();
      }
    }

    void asyncResample(std::vector<ThreadRef> threads, Executor executor,
                       ThreadsHandler done) override {
      auto completion =
          Completion<std::vector<ThreadSample>>::make(std::move(executor), std::move(done));
      if (!beginOperation(*slot_, completion, "resample")) return;
      std::vector<ThreadSample> out;
      {
        std::lock_guard lock(state_->mutex);
        ++state_->resample_calls;
        if (!state_->resamples.empty()) {
          const Snapshot& s = state_->resamples.front();
          for (const auto& t : threads) {
            for (const auto& p : s.processes) {
              for (const auto& th : p.threads) {
                if (th.id == t) out.push_back(th);
              }
            }
          }
          if (state_->resamples.size() > 1) state_->resamples.pop_front();
        }
      }
      slot_->end();
      completion->complete(std::move(out));
    }

    void cancel() override { slot_->cancel(); }

    std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
        std::span<const ThreadRef> threads) override {
      std::lock_guard lock(state_->mutex);
      state_->wait_time_requests.assign(threads.begin(), threads.end());
      std::vector<std::optional<std::chrono::milliseconds>> out;
      for (const auto& t : threads) {
        auto it = state_->wait_times.find(t);
        out.push_back(it == state_->wait_times.end() ? std::nullopt : std::optional(it->second));
      }
      return out;
    }

   private:
    std::shared_ptr<State> state_;
    std::shared_ptr<OperationSlot> slot_ = std::make_shared<OperationSlot>();
    Pid pid_;
  };

  std::shared_ptr<State> state_ = std::make_shared<State>();
};

/// An inspector that records what it was asked to capture.
class FakeThreadInspector final : public ThreadInspector {
 public:
  std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) override {
    std::lock_guard lock(mutex_);
    std::vector<ThreadCapture> out;
    for (const auto& t : threads) {
      requested.push_back(t);
      ThreadCapture c;
      c.thread = t;
      c.captured = fail_with.empty();
      c.error = fail_with;
      out.push_back(c);
    }
    return out;
  }
  std::vector<ThreadRef> requested;
  /// When set, every capture fails with this error.
  std::string fail_with;

 private:
  std::mutex mutex_;
};

}  // namespace wctmon::testing
