#pragma once

#include <cstdint>

#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"
#include "core/wait_graph.h"
#include "model/result.h"
#include "model/wait_model.h"

namespace wctmon {

/// What one analysis should do.
struct AnalyzeOptions {
  std::uint32_t max_nodes = kDefaultMaxNodes;
  bool out_of_proc = false;
  /// A timed wait closes a cycle only when it has more than this left (the service passes the
  /// target's hang threshold).
  std::chrono::milliseconds timed_wait_bound = kDefaultTimedWaitBound;
  /// Capture register contexts and stacks of the threads in each confirmed cycle.
  bool capture = false;
  /// How many re-reads a cycle may take to be confirmed before it is dropped as unconfirmed.
  int confirm_attempts = 4;
  /// The process's sample cache, when it is sampled again and again (the service).
  SampleCache* cache = nullptr;
  /// Which threads get a chain (threads in cycles always do); empty = every thread.
  std::function<bool(const ThreadSample&)> chain_filter = {};
};

/// Samples a process, builds its chains, confirms each cycle by a second read and, when asked,
/// captures the evidence of the confirmed ones. Platform-neutral: the source and inspector are
/// the platform's.
class WaitChainAnalyzer {
 public:
  WaitChainAnalyzer(WaitChainSource& source, ThreadInspector* inspector)
      : source_(source), inspector_(inspector) {}

  /// Analyses one process; with `samples`, also hands back its threads as read (after
  /// confirmation), which the service keeps as history.
  [[nodiscard]] Result<AnalysisResult> analyze(Pid pid, const AnalyzeOptions& options,
                                               std::vector<ThreadSample>* samples = nullptr);

  /// Analyses every process of the system, following chains across processes.
  [[nodiscard]] Result<AnalysisResult> analyzeAll(const AnalyzeOptions& options);

 private:
  AnalysisResult finish(Snapshot snapshot, std::vector<Pid> roots, const AnalyzeOptions& options,
                        std::vector<ThreadSample>* samples);
  /// Sets how long each blocked thread of the reported chains has waited, as the platform tells.
  void addWaitTimes(std::vector<WaitChain>& chains);

  WaitChainSource& source_;
  ThreadInspector* inspector_;
};

}  // namespace wctmon
