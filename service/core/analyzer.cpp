#include "core/analyzer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/bounded_capture.h"
#include "core/completion.h"

namespace wctmon {
namespace {

std::vector<ThreadRef> cycleThreads(const std::vector<Deadlock>& deadlocks) {
  std::vector<ThreadRef> out;
  for (const auto& d : deadlocks) out.insert(out.end(), d.threads.begin(), d.threads.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Every thread of `snapshot` by its id: a confirmation looks up each thread of its cycles,
/// which may span a thousand processes.
std::unordered_map<ThreadRef, ThreadSample*> threadsOf(Snapshot& snapshot) {
  std::unordered_map<ThreadRef, ThreadSample*> out;
  for (auto& process : snapshot.processes) {
    for (auto& thread : process.threads) out.emplace(thread.id, &thread);
  }
  return out;
}

/// One analysis in flight: each step is the completion of the previous one.
class AnalysisRun : public std::enable_shared_from_this<AnalysisRun> {
 public:
  AnalysisRun(std::shared_ptr<WaitChainSession> session, AnalyzeOptions options,
              ThreadInspector* inspector, Executor executor, WaitChainAnalyzer::Handler done)
      : session_(std::move(session)),
        options_(std::move(options)),
        inspector_(inspector),
        executor_(std::move(executor)),
        done_(std::move(done)),
        started_(std::chrono::steady_clock::now()) {
    if (options_.all_processes) options_.out_of_proc = true;
    graph_options_ = GraphOptions{.max_nodes = options_.max_nodes,
                                  .timed_wait_bound = options_.timed_wait_bound,
                                  .out_of_proc = options_.out_of_proc,
                                  .chain_filter = options_.chain_filter};
  }

  /// From any thread: the step in flight or the next one ends the analysis with kCancelled.
  void cancel() {
    cancelled_ = true;
    session_->cancel();
  }

  void start() {
    session_->asyncSample(SampleScope{.out_of_proc = options_.out_of_proc,
                                      .wct = options_.wct,
                                      .on_demand = options_.on_demand,
                                      .threads_alone = options_.threads_alone},
                          executor_, [self = shared_from_this()](Result<Snapshot> snapshot) {
                            self->sampled(std::move(snapshot));
                          });
  }

 private:
  void sampled(Result<Snapshot> snapshot) {
    if (!snapshot) {
      done_(snapshot.error());
      return;
    }
    if (endIfCancelled()) return;
    snapshot_ = std::move(snapshot).value();
    if (options_.all_processes) {
      for (const auto& p : snapshot_.processes) roots_.push_back(p.pid);
    } else if (!snapshot_.processes.empty()) {
      roots_.push_back(snapshot_.processes.front().pid);
    }
    graph_ = analyzeWaitGraph(snapshot_, roots_, graph_options_);
    confirmNext();
  }

  /// Reads of different threads are not simultaneous, so a cycle seen once may be an artefact
  /// of threads moving between reads. A cycle counts only when a second read finds every thread
  /// in it in the same wait, on the same owners, without having been scheduled in between. Each
  /// cycle is confirmed on its own: one that keeps changing does not discard the others.
  void confirmNext() {
    pending_.clear();
    for (const auto& d : graph_.deadlocks) {
      if (!confirmed_.contains(d.threads)) pending_.push_back(d.threads);
    }
    if (pending_.empty() || attempt_ >= options_.confirm_attempts) {
      finish();
      return;
    }
    ++attempt_;
    std::vector<ThreadRef> suspects;
    for (const auto& threads : pending_)
      suspects.insert(suspects.end(), threads.begin(), threads.end());
    std::sort(suspects.begin(), suspects.end());
    suspects.erase(std::unique(suspects.begin(), suspects.end()), suspects.end());
    session_->asyncResample(std::move(suspects), executor_,
                            [self = shared_from_this()](Result<std::vector<ThreadSample>> again) {
                              self->resampled(std::move(again));
                            });
  }

  void resampled(Result<std::vector<ThreadSample>> again) {
    if (!again) {
      done_(again.error());
      return;
    }
    if (endIfCancelled()) return;
    std::set<ThreadRef> changed;
    const auto by_id = threadsOf(snapshot_);
    for (auto& sample : *again) {
      const auto found = by_id.find(sample.id);
      ThreadSample* old = found != by_id.end() ? found->second : nullptr;
      if (old == nullptr || sameBlockedWait(*old, sample)) continue;
      changed.insert(sample.id);
      *old = std::move(sample);
    }
    // A thread that exited in between is no longer there: a chain into it says so.
    for (auto& process : snapshot_.processes) std::erase_if(process.threads, isExited);
    for (const auto& threads : pending_) {
      if (std::none_of(threads.begin(), threads.end(),
                       [&](const ThreadRef& t) { return changed.contains(t); })) {
        confirmed_.insert(threads);
      }
    }
    if (!changed.empty()) graph_ = analyzeWaitGraph(snapshot_, roots_, graph_options_);
    confirmNext();
  }

  void finish() {
    Analysis out;
    AnalysisResult& result = out.result;
    result.sampled_at = std::chrono::system_clock::now();
    const auto dropped = std::erase_if(
        graph_.deadlocks, [&](const Deadlock& d) { return !confirmed_.contains(d.threads); });
    if (dropped > 0) {
      result.warnings.push_back(
          "a cycle was seen but kept changing between reads; not reported as a deadlock");
      // Every cycle mark is a deadlock: a chain into a cycle that was not confirmed is not one.
      std::set<ThreadRef> in_deadlocks;
      for (const auto& d : graph_.deadlocks)
        in_deadlocks.insert(d.threads.begin(), d.threads.end());
      for (auto& chain : graph_.chains) {
        if (chain.is_cycle && !in_deadlocks.contains(chain.nodes.back().thread))
          chain.is_cycle = false;
      }
    }

    crossCheckPlatformCycles(result.warnings);
    addWaitTimes(graph_.chains);

    // The last chance to stop: a capture stops the target's threads for a caller who left.
    if (endIfCancelled()) return;
    if (options_.capture && inspector_ != nullptr && !graph_.deadlocks.empty()) {
      const auto threads = cycleThreads(graph_.deadlocks);
      result.captures = captureBounded(*inspector_, threads, SystemClock{});
      for (const auto& p : snapshot_.processes) {
        attachRuntimeStacks(result.captures, runtimeStacksOf(threads, p.threads));
      }
    }

    for (const auto& p : snapshot_.processes) {
      if (std::find(roots_.begin(), roots_.end(), p.pid) == roots_.end()) continue;
      result.thread_count += static_cast<std::uint32_t>(p.threads.size());
      ++result.process_count;
      if (p.go) result.go_programs.push_back(*p.go);
    }
    if (!snapshot_.processes.empty() && !options_.all_processes) {
      result.pid = snapshot_.processes.front().pid;
      result.process_start_time = snapshot_.processes.front().start_time;
      result.process_name = snapshot_.processes.front().name;
      result.process_title = snapshot_.processes.front().title;
      out.threads = std::move(snapshot_.processes.front().threads);
      for (std::size_t i = 1; i < snapshot_.processes.size(); ++i) {
        const auto& p = snapshot_.processes[i];
        result.other_processes.push_back(ProcessSeen{p.pid, p.start_time, p.name, p.title});
      }
    }
    result.chains = std::move(graph_.chains);
    result.deadlocks = std::move(graph_.deadlocks);
    result.warnings.insert(result.warnings.end(), snapshot_.warnings.begin(),
                           snapshot_.warnings.end());
    result.analysis_time = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started_);
    done_(std::move(out));
  }

  bool endIfCancelled() {
    if (!cancelled_) return false;
    done_(cancelledError("the analysis"));
    return true;
  }

  /// Says which threads the platform saw in a cycle (WCT's IsCycle) that no reported deadlock
  /// holds: a cycle closed by a timed wait, one that changed between reads, or one the graph
  /// cannot close (an owner the platform did not name).
  void crossCheckPlatformCycles(std::vector<std::string>& warnings) const {
    std::set<ThreadRef> in_deadlocks;
    for (const auto& d : graph_.deadlocks) in_deadlocks.insert(d.threads.begin(), d.threads.end());
    std::string unmatched;
    for (const auto& p : snapshot_.processes) {
      for (const auto& t : p.threads) {
        if (!t.platform_cycle || in_deadlocks.contains(t.id)) continue;
        unmatched += (unmatched.empty() ? "" : ", ") + std::to_string(t.id.tid.value);
      }
    }
    if (unmatched.empty()) return;
    warnings.push_back("the platform reports a cycle through thread(s) " + unmatched +
                       " that is not a deadlock here (a timed wait, a wait that changed "
                       "between reads, or an owner it did not name)");
  }

  /// Sets how long each blocked thread of the reported chains has waited, as the platform tells.
  void addWaitTimes(std::vector<WaitChain>& chains) {
    // Only blocked threads of chains that are reported: the platform's read is not free.
    std::vector<ThreadRef> threads;
    for (const auto& chain : chains) {
      if (!leadsSomewhere(chain)) continue;
      for (const auto& node : chain.nodes) {
        if (node.isThread() && node.status == ObjectStatus::kBlocked)
          threads.push_back(node.thread);
      }
    }
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    if (threads.empty()) return;
    const auto times = session_->waitTimes(threads);
    std::unordered_map<ThreadRef, std::chrono::milliseconds> by_thread;
    for (std::size_t i = 0; i < threads.size() && i < times.size(); ++i) {
      if (times[i]) by_thread.emplace(threads[i], *times[i]);
    }
    for (auto& chain : chains) {
      for (auto& node : chain.nodes) {
        if (!node.isThread() || node.status != ObjectStatus::kBlocked) continue;
        if (auto it = by_thread.find(node.thread); it != by_thread.end())
          node.wait_time = it->second;
      }
    }
  }

  std::shared_ptr<WaitChainSession> session_;
  AnalyzeOptions options_;
  GraphOptions graph_options_;
  ThreadInspector* inspector_;
  Executor executor_;
  WaitChainAnalyzer::Handler done_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<bool> cancelled_{false};
  Snapshot snapshot_;
  std::vector<Pid> roots_;
  GraphAnalysis graph_;
  std::set<std::vector<ThreadRef>> confirmed_;
  std::vector<std::vector<ThreadRef>> pending_;
  int attempt_ = 0;
};

}  // namespace

WaitChainAnalyzer::Cancel WaitChainAnalyzer::asyncAnalyze(std::shared_ptr<WaitChainSession> session,
                                                          AnalyzeOptions options, Executor executor,
                                                          Handler done) {
  auto run = std::make_shared<AnalysisRun>(std::move(session), std::move(options), inspector_,
                                           std::move(executor), std::move(done));
  run->start();
  return [weak = std::weak_ptr<AnalysisRun>(run)] {
    if (auto alive = weak.lock()) alive->cancel();
  };
}

Result<Analysis> analyzeNow(RunLoop& loop, WaitChainAnalyzer& analyzer,
                            std::shared_ptr<WaitChainSession> session, AnalyzeOptions options) {
  std::optional<Result<Analysis>> out;
  analyzer.asyncAnalyze(std::move(session), std::move(options), loop.executor(),
                        [&out](Result<Analysis> analysis) { out.emplace(std::move(analysis)); });
  loop.run();
  if (!out) return makeError(ErrorCode::kInternal, "the analysis never completed");
  return std::move(*out);
}

}  // namespace wctmon
