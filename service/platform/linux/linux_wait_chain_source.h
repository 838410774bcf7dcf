#pragma once

#include <memory>

#include "core/executor.h"
#include "core/ports/wait_chain_source.h"
#include "platform/linux/taskstats.h"

namespace wctmon::linux_platform {
struct RuntimeViews;
struct SharedReads;
}  // namespace wctmon::linux_platform

namespace wctmon::linux_platform {

/// Wait chains from /proc and process memory: WCT's semantics built on what Linux exposes. The
/// reads are synchronous system calls; each runs as one task on the work executor (the
/// service's pool, the one-shot command's loop) and completes to the caller's executor.
class LinuxWaitChainSource final : public WaitChainSource {
 public:
  explicit LinuxWaitChainSource(Executor work);

  /// A session keeps what makes the next sample of its process cheap: kept-open descriptors and
  /// the last reading of each thread (ThreadCache).
  [[nodiscard]] Result<std::unique_ptr<WaitChainSession>> open(Pid pid) override;
  [[nodiscard]] Result<std::unique_ptr<WaitChainSession>> openSystem() override;
  [[nodiscard]] Availability availability() const override;

 private:
  Executor work_;
  std::shared_ptr<TaskstatsClient> taskstats_;
  /// What runtimes (the JVM, PostgreSQL) say of their threads, kept across sessions.
  std::shared_ptr<RuntimeViews> views_;
  /// What periodic samples share: the latest reads of processes that chains lead to, the table
  /// of every descriptor.
  std::shared_ptr<SharedReads> shared_;
};

}  // namespace wctmon::linux_platform
