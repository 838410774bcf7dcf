#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"

namespace wctmon::testing {

/// A wait-chain source that replays snapshots: the first for sample(), then one per resample().
class FakeWaitChainSource final : public WaitChainSource {
 public:
  void setSample(Result<Snapshot> s) { sample_ = std::move(s); }
  /// Each resample() answers from the next queued snapshot (the last one repeats).
  void queueResample(Snapshot s) { resamples_.push_back(std::move(s)); }
  void clearResamples() { resamples_.clear(); }

  Result<Snapshot> sample(Pid, const SampleOptions& options) override {
    last_options = options;
    return sample_;
  }
  Result<Snapshot> sampleAll() override { return sample_; }
  std::vector<ThreadSample> resample(std::span<const ThreadRef> threads) override {
    ++resample_calls;
    std::vector<ThreadSample> out;
    if (resamples_.empty()) return out;
    const Snapshot& s = resamples_.front();
    for (const auto& t : threads) {
      for (const auto& p : s.processes) {
        for (const auto& th : p.threads) {
          if (th.id == t) out.push_back(th);
        }
      }
    }
    if (resamples_.size() > 1) resamples_.pop_front();
    return out;
  }

  std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
      std::span<const ThreadRef> threads) override {
    wait_time_requests.assign(threads.begin(), threads.end());
    std::vector<std::optional<std::chrono::milliseconds>> out;
    for (const auto& t : threads) {
      auto it = wait_times.find(t);
      out.push_back(it == wait_times.end() ? std::nullopt : std::optional(it->second));
    }
    return out;
  }

  int resample_calls = 0;
  SampleOptions last_options;
  /// What waitTimes() answers, and what it was last asked.
  std::map<ThreadRef, std::chrono::milliseconds> wait_times;
  std::vector<ThreadRef> wait_time_requests;

 private:
  Result<Snapshot> sample_ = Snapshot{};
  std::deque<Snapshot> resamples_;
};

/// An inspector that records what it was asked to capture.
class FakeThreadInspector final : public ThreadInspector {
 public:
  std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) override {
    std::vector<ThreadCapture> out;
    for (const auto& t : threads) {
      requested.push_back(t);
      ThreadCapture c;
      c.thread = t;
      c.captured = true;
      out.push_back(c);
    }
    return out;
  }
  std::vector<ThreadRef> requested;
};

}  // namespace wctmon::testing
