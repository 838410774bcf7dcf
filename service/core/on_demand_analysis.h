#pragma once

#include "core/analyzer.h"
#include "core/executor.h"
#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"

namespace wctmon {

/// Analyses of any process a person asks for (the API's AnalyzeProcess), each on a session of
/// its own, apart from the sampling of the watched processes: watched or not, the process is
/// read afresh, and evidence is captured when the request asks.
class OnDemandAnalysis {
 public:
  OnDemandAnalysis(WaitChainSource& source, ThreadInspector* inspector)
      : source_(source), analyzer_(inspector) {}

  /// Analyzes `pid`: the analysis as completions on `executor`, `done` once with the result. The
  /// analysis can be cancelled (its caller gone) with what this returns.
  WaitChainAnalyzer::Cancel asyncAnalyze(Pid pid, AnalyzeOptions options, Executor executor,
                                         WaitChainAnalyzer::Handler done);

 private:
  WaitChainSource& source_;
  WaitChainAnalyzer analyzer_;
};

}  // namespace wctmon
