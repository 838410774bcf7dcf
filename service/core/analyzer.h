#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/executor.h"
#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"
#include "core/run_loop.h"
#include "core/wait_graph.h"
#include "model/result.h"
#include "model/wait_model.h"

namespace wctmon {

/// What one analysis should do.
struct AnalyzeOptions {
  std::uint32_t max_nodes = kDefaultMaxNodes;
  bool out_of_proc = false;
  /// With out_of_proc, WCT's further flags (Windows).
  WctFlags wct{};
  /// Every process of a system session is a root of the analysis (chains across processes).
  bool all_processes = false;
  /// A timed wait closes a cycle only when it has more than this left (the service passes the
  /// target's hang threshold).
  std::chrono::milliseconds timed_wait_bound = kDefaultTimedWaitBound;
  /// Capture register contexts and stacks of the threads in each confirmed cycle (the first
  /// kMaxCapturedThreads of them, within kCaptureTimeBudget; the rest are named).
  bool capture = false;
  /// How many re-reads a cycle may take to be confirmed before it is dropped as unconfirmed.
  int confirm_attempts = 4;
  /// Which threads get a chain (threads in cycles always do); empty = every thread.
  std::function<bool(const ThreadSample&)> chain_filter = {};
  /// A person waits for this analysis (SampleScope::on_demand); false for periodic samples.
  bool on_demand = true;
  /// The threads alone will do where waits cannot be read (SampleScope::threads_alone).
  bool threads_alone = false;
};

/// What one analysis hands back: the result, and the threads of the first process as read
/// (after confirmation), which the service keeps as history.
struct Analysis {
  AnalysisResult result;
  std::vector<ThreadSample> threads;
};

/// Samples a process through its session, builds its chains, confirms each cycle by re-reads and,
/// when asked, captures the evidence of the confirmed ones. Platform-neutral and asynchronous:
/// every step is a completion of the session on the caller's executor, so no thread waits for
/// the platform.
class WaitChainAnalyzer {
 public:
  using Handler = std::function<void(Result<Analysis>)>;
  /// Cancels an analysis in flight: its handler runs with kCancelled at once if a platform read
  /// is in flight, or at its next step otherwise, and nothing further is done (no re-read, no
  /// capture). Does nothing once the analysis has completed; callable from any thread.
  using Cancel = std::function<void()>;

  explicit WaitChainAnalyzer(ThreadInspector* inspector) : inspector_(inspector) {}
  WaitChainAnalyzer(const WaitChainAnalyzer&) = delete;
  WaitChainAnalyzer& operator=(const WaitChainAnalyzer&) = delete;

  /// Analyses what `session` samples; `done` runs on `executor` once, with the analysis or the
  /// error of the sample (kCancelled when the session or the analysis was cancelled meanwhile).
  Cancel asyncAnalyze(std::shared_ptr<WaitChainSession> session, AnalyzeOptions options,
                      Executor executor, Handler done);

 private:
  ThreadInspector* inspector_;
};

/// Runs one analysis to its end on the calling thread, on the same asynchronous path as the
/// service: `loop` must be the loop the session's source does its work on (the one-shot command).
[[nodiscard]] Result<Analysis> analyzeNow(RunLoop& loop, WaitChainAnalyzer& analyzer,
                                          std::shared_ptr<WaitChainSession> session,
                                          AnalyzeOptions options);

}  // namespace wctmon
