#pragma once

#include <functional>

#include "core/ports/hot_spot_sampler.h"
#include "core/profile_queue.h"

namespace wctmon::linux_platform {

/// Where a running thread spends its time, read without stopping it: a per-thread perf event on
/// the task clock samples its user-space instruction pointer (at kFrequency), written by the
/// kernel into a ring buffer that is read after each window; the addresses are then named from
/// the symbol tables of the files mapped at them (elfutils). The profiles run one after the
/// other (core/profile_queue.h).
class PerfHotSpotSampler final : public HotSpotSampler {
 public:
  static constexpr unsigned kFrequency = 499;

  void asyncProfile(ThreadRef thread, std::chrono::milliseconds window,
                    std::function<void(Result<ThreadProfile>)> done) override;

  /// Profiles `thread` now, on the calling thread.
  [[nodiscard]] static Result<ThreadProfile> profile(ThreadRef thread,
                                                     std::chrono::milliseconds window);

 private:
  ProfileQueue queue_{[](ThreadRef thread, std::chrono::milliseconds window,
                         const std::atomic<bool>& /*stop*/) { return profile(thread, window); }};
};

}  // namespace wctmon::linux_platform
