#pragma once

#include "core/ports/wait_chain_source.h"
#include "platform/linux/taskstats.h"

namespace wctmon::linux_platform {

/// Wait chains from /proc and process memory: WCT's semantics built on what Linux exposes.
class LinuxWaitChainSource final : public WaitChainSource {
 public:
  /// The most processes one out-of-process sample follows into.
  static constexpr std::size_t kMaxFollowedProcesses = 256;

  [[nodiscard]] Result<Snapshot> sample(Pid pid, const SampleOptions& options) override;
  [[nodiscard]] std::unique_ptr<SampleCache> makeCache() override;
  [[nodiscard]] Result<Snapshot> sampleAll() override;
  [[nodiscard]] std::vector<ThreadSample> resample(std::span<const ThreadRef> threads) override;
  /// From the scheduler's clock: `se.exec_start` of the thread's sched file (when it last ran)
  /// against the same field of our own, read at once (now, on that clock).
  [[nodiscard]] std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
      std::span<const ThreadRef> threads) override;

 private:
  TaskstatsClient taskstats_;
};

}  // namespace wctmon::linux_platform
