#include "core/on_demand_analysis.h"

#include <memory>
#include <utility>

namespace wctmon {

WaitChainAnalyzer::Cancel OnDemandAnalysis::asyncAnalyze(Pid pid, AnalyzeOptions options,
                                                         Executor executor,
                                                         WaitChainAnalyzer::Handler done) {
  auto session = source_.open(pid);
  if (!session) {
    executor([done = std::move(done), error = session.error()] { done(error); });
    return [] {};
  }
  return analyzer_.asyncAnalyze(std::shared_ptr<WaitChainSession>(std::move(*session)),
                                std::move(options), std::move(executor), std::move(done));
}

}  // namespace wctmon
