#pragma once

#include <functional>
#include <memory>

#include "core/executor.h"
#include "core/ports/wait_chain_source.h"
#include "platform/windows/wct_api.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform {

/// GetThreadWaitChain's flags for a sample of `scope`: none within the process; with out_of_proc,
/// WCT_OUT_OF_PROC_FLAG and the further flags the target keeps.
[[nodiscard]] DWORD wctFlagsOf(const SampleScope& scope);

/// Wait chains from Wait Chain Traversal, asynchronously: each sample opens a WCT session with
/// WCT_ASYNC_OPEN_FLAG, asks GetThreadWaitChain for every thread of the process (Toolhelp32),
/// and completes when WCT has called back for the last of them, on WCT's own thread; the
/// translation into the core's model and the caller's completion then run on the executors.
/// Cancelling closes the WCT session: its pending requests end with ERROR_CANCELLED.
class WctWaitChainSource final : public WaitChainSource {
 public:
  /// Lists a process's threads before WCT is asked about them (Toolhelp32 by default).
  using ThreadLister = std::function<Result<ProcessThreads>(Pid)>;

  /// `work` runs what blocks or costs: the enumeration, the requests, the translation and
  /// closing sessions.
  WctWaitChainSource(Executor work, std::shared_ptr<WctApi> api, ThreadLister lister);

  [[nodiscard]] Result<std::unique_ptr<WaitChainSession>> open(Pid pid) override;
  /// Every process at once is not something WCT offers: each session is on one process.
  [[nodiscard]] Result<std::unique_ptr<WaitChainSession>> openSystem() override;
  [[nodiscard]] Availability availability() const override;

 private:
  Executor work_;
  std::shared_ptr<WctApi> api_;
  ThreadLister lister_;
};

}  // namespace wctmon::windows_platform
