#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/ports/hot_spot_sampler.h"

namespace wctmon::linux_platform {

/// Where a running thread spends its time, read without stopping it: a per-thread perf event on
/// the task clock samples its user-space instruction pointer (at kFrequency), written by the
/// kernel into a ring buffer that is read after each window; the addresses are then named from
/// the symbol tables of the files mapped at them (elfutils). One thread of its own does the
/// profiles, one after the other: they are rare (a thread busy past its threshold).
class PerfHotSpotSampler final : public HotSpotSampler {
 public:
  static constexpr unsigned kFrequency = 499;

  PerfHotSpotSampler();
  ~PerfHotSpotSampler() override;
  PerfHotSpotSampler(const PerfHotSpotSampler&) = delete;
  PerfHotSpotSampler& operator=(const PerfHotSpotSampler&) = delete;

  void asyncProfile(ThreadRef thread, std::chrono::milliseconds window,
                    std::function<void(Result<ThreadProfile>)> done) override;

  /// Profiles `thread` now, on the calling thread.
  [[nodiscard]] static Result<ThreadProfile> profile(ThreadRef thread,
                                                     std::chrono::milliseconds window);

 private:
  struct Job {
    ThreadRef thread;
    std::chrono::milliseconds window;
    std::function<void(Result<ThreadProfile>)> done;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace wctmon::linux_platform
