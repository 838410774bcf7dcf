#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "model/ids.h"
#include "model/result.h"
#include "model/snapshot.h"

namespace wctmon {

/// What a source may keep between samples of the same process to make the next one cheaper
/// (kept-open descriptors, the last reading of each thread). Opaque to its users; one sample at
/// a time per cache.
class SampleCache {
 public:
  virtual ~SampleCache() = default;
};

/// How far a sample reaches.
struct SampleOptions {
  /// Also sample the processes that the waits of the sampled ones lead to (WCT_OUT_OF_PROC_FLAG).
  bool out_of_proc = false;
  /// The cache of the sampled process, for repeated samples (the service); nullptr for one-shot.
  SampleCache* cache = nullptr;
};

/// Reads the wait state of live processes without stopping them: /proc and process memory on
/// Linux, a Wait Chain Traversal session on Windows.
class WaitChainSource {
 public:
  virtual ~WaitChainSource() = default;

  /// Samples every thread of `pid` (first in the snapshot) and, with out_of_proc, the processes
  /// its waits lead to. Fails with kNoSuchProcess or kAccessDenied when the process cannot be read.
  [[nodiscard]] virtual Result<Snapshot> sample(Pid pid, const SampleOptions& options) = 0;

  /// A new, empty cache for repeated samples of one process.
  [[nodiscard]] virtual std::unique_ptr<SampleCache> makeCache() { return nullptr; }

  /// Samples every process of the system.
  [[nodiscard]] virtual Result<Snapshot> sampleAll() = 0;

  /// Reads the given threads again, with their waits and owners, to confirm a cycle. A thread
  /// that is gone comes back with status Error.
  [[nodiscard]] virtual std::vector<ThreadSample> resample(std::span<const ThreadRef> threads) = 0;

  /// How long each thread has been off the CPU, which for a blocked thread is how long it has
  /// waited, where the platform can tell; nullopt where it cannot (never a made-up 0).
  [[nodiscard]] virtual std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
      std::span<const ThreadRef> threads) {
    return std::vector<std::optional<std::chrono::milliseconds>>(threads.size());
  }
};

}  // namespace wctmon
