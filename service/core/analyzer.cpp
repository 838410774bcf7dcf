#include "core/analyzer.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_map>

namespace wctmon {
namespace {

std::vector<ThreadRef> cycleThreads(const std::vector<Deadlock>& deadlocks) {
  std::vector<ThreadRef> out;
  for (const auto& d : deadlocks) out.insert(out.end(), d.threads.begin(), d.threads.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ThreadSample* findThread(Snapshot& snapshot, ThreadRef ref) {
  for (auto& process : snapshot.processes) {
    if (process.pid != ref.pid) continue;
    for (auto& thread : process.threads) {
      if (thread.id == ref) return &thread;
    }
  }
  return nullptr;
}

}  // namespace

void WaitChainAnalyzer::addWaitTimes(std::vector<WaitChain>& chains) {
  // Only blocked threads of chains that are reported: the platform's read is not free.
  std::vector<ThreadRef> threads;
  for (const auto& chain : chains) {
    if (!leadsSomewhere(chain)) continue;
    for (const auto& node : chain.nodes) {
      if (node.isThread() && node.status == ObjectStatus::kBlocked) threads.push_back(node.thread);
    }
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  if (threads.empty()) return;
  const auto times = source_.waitTimes(threads);
  std::unordered_map<ThreadRef, std::chrono::milliseconds> by_thread;
  for (std::size_t i = 0; i < threads.size() && i < times.size(); ++i) {
    if (times[i]) by_thread.emplace(threads[i], *times[i]);
  }
  for (auto& chain : chains) {
    for (auto& node : chain.nodes) {
      if (!node.isThread() || node.status != ObjectStatus::kBlocked) continue;
      if (auto it = by_thread.find(node.thread); it != by_thread.end()) node.wait_time = it->second;
    }
  }
}

Result<AnalysisResult> WaitChainAnalyzer::analyze(Pid pid, const AnalyzeOptions& options,
                                                  std::vector<ThreadSample>* samples) {
  const auto started = std::chrono::steady_clock::now();
  auto snapshot = source_.sample(
      pid, SampleOptions{.out_of_proc = options.out_of_proc, .cache = options.cache});
  if (!snapshot) return snapshot.error();
  auto result = finish(std::move(snapshot).value(), {pid}, options, samples);
  result.analysis_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return result;
}

Result<AnalysisResult> WaitChainAnalyzer::analyzeAll(const AnalyzeOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto snapshot = source_.sampleAll();
  if (!snapshot) return snapshot.error();
  std::vector<Pid> roots;
  for (const auto& p : snapshot->processes) roots.push_back(p.pid);
  AnalyzeOptions all = options;
  all.out_of_proc = true;
  auto result = finish(std::move(snapshot).value(), std::move(roots), all, nullptr);
  result.pid = Pid{0};
  result.process_start_time = 0;
  result.process_name.clear();
  result.analysis_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return result;
}

AnalysisResult WaitChainAnalyzer::finish(Snapshot snapshot, std::vector<Pid> roots,
                                         const AnalyzeOptions& options,
                                         std::vector<ThreadSample>* samples) {
  AnalysisResult result;
  result.sampled_at = std::chrono::system_clock::now();
  const GraphOptions graph_options{.max_nodes = options.max_nodes,
                                   .timed_wait_bound = options.timed_wait_bound,
                                   .out_of_proc = options.out_of_proc,
                                   .chain_filter = options.chain_filter};

  // Reads of different threads are not simultaneous, so a cycle seen once may be an artefact of
  // threads moving between reads. A cycle counts only when a second read finds every thread in
  // it in the same wait, on the same owners, without having been scheduled in between. Each
  // cycle is confirmed on its own: one that keeps changing does not discard the others.
  GraphAnalysis graph = analyzeWaitGraph(snapshot, roots, graph_options);
  std::set<std::vector<ThreadRef>> confirmed;
  const auto unconfirmed = [&] {
    std::vector<const Deadlock*> out;
    for (const auto& d : graph.deadlocks) {
      if (!confirmed.contains(d.threads)) out.push_back(&d);
    }
    return out;
  };
  for (int attempt = 0; attempt < options.confirm_attempts; ++attempt) {
    const auto pending = unconfirmed();
    if (pending.empty()) break;
    std::vector<ThreadRef> suspects;
    for (const auto* d : pending)
      suspects.insert(suspects.end(), d->threads.begin(), d->threads.end());
    std::sort(suspects.begin(), suspects.end());
    suspects.erase(std::unique(suspects.begin(), suspects.end()), suspects.end());
    std::set<ThreadRef> changed;
    for (const auto& sample : source_.resample(suspects)) {
      ThreadSample* old = findThread(snapshot, sample.id);
      if (old == nullptr || sameBlockedWait(*old, sample)) continue;
      changed.insert(sample.id);
      *old = sample;
    }
    // A thread that exited in between is no longer there: a chain into it says so.
    for (auto& process : snapshot.processes) std::erase_if(process.threads, isExited);
    for (const auto* d : pending) {
      if (std::none_of(d->threads.begin(), d->threads.end(),
                       [&](const ThreadRef& t) { return changed.contains(t); })) {
        confirmed.insert(d->threads);
      }
    }
    if (!changed.empty()) graph = analyzeWaitGraph(snapshot, roots, graph_options);
  }
  const auto dropped = std::erase_if(
      graph.deadlocks, [&](const Deadlock& d) { return !confirmed.contains(d.threads); });
  if (dropped > 0) {
    result.warnings.push_back(
        "a cycle was seen but kept changing between reads; not reported as a deadlock");
    // Every cycle mark is a deadlock: a chain into a cycle that was not confirmed is not one.
    std::set<ThreadRef> in_deadlocks;
    for (const auto& d : graph.deadlocks) in_deadlocks.insert(d.threads.begin(), d.threads.end());
    for (auto& chain : graph.chains) {
      if (chain.is_cycle && !in_deadlocks.contains(chain.nodes.back().thread))
        chain.is_cycle = false;
    }
  }

  addWaitTimes(graph.chains);

  if (options.capture && inspector_ != nullptr && !graph.deadlocks.empty()) {
    result.captures = inspector_->capture(cycleThreads(graph.deadlocks));
  }

  for (const auto& p : snapshot.processes) {
    if (std::find(roots.begin(), roots.end(), p.pid) == roots.end()) continue;
    result.thread_count += static_cast<std::uint32_t>(p.threads.size());
    ++result.process_count;
  }
  if (!snapshot.processes.empty()) {
    result.pid = snapshot.processes.front().pid;
    result.process_start_time = snapshot.processes.front().start_time;
    result.process_name = snapshot.processes.front().name;
    if (samples != nullptr) *samples = std::move(snapshot.processes.front().threads);
  }
  result.chains = std::move(graph.chains);
  result.deadlocks = std::move(graph.deadlocks);
  result.warnings.insert(result.warnings.end(), snapshot.warnings.begin(), snapshot.warnings.end());
  return result;
}

}  // namespace wctmon
