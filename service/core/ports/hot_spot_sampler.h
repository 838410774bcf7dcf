#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/result.h"

namespace wctmon {

/// A function a running thread was seen in, and how often.
struct HotFunction {
  /// "spin_until_ready", or "module+0x1a40" where the module has no symbol for it.
  std::string function;
  /// The file it is in ("libfoo.so.1"), or "[kernel]".
  std::string module;
  std::uint32_t samples = 0;
  friend bool operator==(const HotFunction&, const HotFunction&) = default;
};

/// Where a thread ran during two windows, one after the other: what tells a thread spinning in
/// place (the same few functions in both) from one making progress (its functions move).
struct ThreadProfile {
  std::chrono::milliseconds window{0};
  /// By function, most samples first.
  std::vector<HotFunction> first;
  std::vector<HotFunction> second;
};

/// Samples the instruction pointer of a running thread (Linux: a per-thread software clock event
/// of perf, without stopping it; Windows: the thread suspended for the register read of each
/// sample and resumed at once). Thread-safe.
class HotSpotSampler {
 public:
  virtual ~HotSpotSampler() = default;
  /// Profiles `thread` over two windows of `window`; `done` runs once, on a thread of the
  /// sampler's, with the profile or why there is none (the thread exited, sampling is not
  /// allowed here).
  virtual void asyncProfile(ThreadRef thread, std::chrono::milliseconds window,
                            std::function<void(Result<ThreadProfile>)> done) = 0;
};

}  // namespace wctmon
