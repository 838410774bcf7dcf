#include "core/wait_graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "model/format.h"

namespace wctmon {
namespace {

/// Read-only lookups over a snapshot.
class SnapshotIndex {
 public:
  SnapshotIndex(const Snapshot& snapshot, std::chrono::milliseconds timed_wait_bound)
      : timed_wait_bound_(timed_wait_bound) {
    std::size_t threads = 0;
    for (const auto& process : snapshot.processes) threads += process.threads.size();
    threads_.reserve(threads);
    processes_.reserve(snapshot.processes.size());
    for (const auto& process : snapshot.processes) {
      processes_.emplace(process.pid, &process);
      for (const auto& thread : process.threads) {
        threads_.emplace(thread.id, Entry{&thread, threads_.size()});
      }
    }
  }

  /// A thread of the snapshot and its place among them (0 to size - 1): what is worked out
  /// per thread can be kept in a vector by that place instead of in a map.
  struct Entry {
    const ThreadSample* sample;
    std::size_t ordinal;
  };

  [[nodiscard]] const Entry* entry(ThreadRef ref) const {
    auto it = threads_.find(ref);
    return it == threads_.end() ? nullptr : &it->second;
  }

  [[nodiscard]] const ThreadSample* thread(ThreadRef ref) const {
    const auto* e = entry(ref);
    return e == nullptr ? nullptr : e->sample;
  }

  [[nodiscard]] const ProcessSample* process(Pid pid) const {
    auto it = processes_.find(pid);
    return it == processes_.end() ? nullptr : it->second;
  }

  /// The threads that can end the wait of `sample`, or nullopt when one of them is outside the
  /// snapshot (and so may well make progress).
  [[nodiscard]] std::optional<std::vector<ThreadRef>> releasers(const ThreadSample& sample) const {
    if (sample.status != ObjectStatus::kBlocked || !sample.wait ||
        sample.wait->status != ObjectStatus::kOwned || isStopped(sample) ||
        (sample.wait->timeout && *sample.wait->timeout <= timed_wait_bound_)) {
      return std::nullopt;
    }
    std::vector<ThreadRef> out;
    for (const auto& owner : sample.wait->owner_threads) {
      if (thread(owner) == nullptr) return std::nullopt;
      out.push_back(owner);
    }
    for (const auto pid : sample.wait->owner_processes) {
      const auto* owner_process = process(pid);
      if (owner_process == nullptr || owner_process->threads.empty()) return std::nullopt;
      for (const auto& t : owner_process->threads) out.push_back(t.id);
    }
    if (out.empty()) return std::nullopt;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  [[nodiscard]] const auto& threads() const { return threads_; }

  [[nodiscard]] static bool isStopped(const ThreadSample& sample) {
    return sample.state == RunState::kStopped || sample.state == RunState::kTraced;
  }

 private:
  std::chrono::milliseconds timed_wait_bound_;
  std::unordered_map<ThreadRef, Entry> threads_;
  std::unordered_map<Pid, const ProcessSample*> processes_;
};

using Edges = std::unordered_map<ThreadRef, std::vector<ThreadRef>>;

/// Greatest fixed point: a thread stays stuck only while all of its releasers are stuck.
Edges stuckEdges(const SnapshotIndex& index) {
  Edges edges;
  for (const auto& [ref, entry] : index.threads()) {
    if (auto r = index.releasers(*entry.sample)) edges.emplace(ref, std::move(*r));
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto it = edges.begin(); it != edges.end();) {
      const bool all_stuck = std::all_of(it->second.begin(), it->second.end(),
                                         [&](const ThreadRef& r) { return edges.contains(r); });
      if (all_stuck) {
        ++it;
      } else {
        it = edges.erase(it);
        changed = true;
      }
    }
  }
  return edges;
}

/// Tarjan's strongly connected components over the stuck subgraph, iteratively.
std::vector<std::vector<ThreadRef>> cyclicComponents(const Edges& edges) {
  std::vector<ThreadRef> nodes;
  nodes.reserve(edges.size());
  for (const auto& [ref, out] : edges) nodes.push_back(ref);
  std::sort(nodes.begin(), nodes.end());

  std::unordered_map<ThreadRef, int> index_of;
  std::unordered_map<ThreadRef, int> low;
  std::unordered_set<ThreadRef> on_stack;
  std::vector<ThreadRef> stack;
  std::vector<std::vector<ThreadRef>> components;
  int next_index = 0;

  struct Frame {
    ThreadRef node;
    std::size_t next_edge;
  };
  for (const auto& root : nodes) {
    if (index_of.contains(root)) continue;
    std::vector<Frame> call{{root, 0}};
    index_of[root] = low[root] = next_index++;
    stack.push_back(root);
    on_stack.insert(root);
    while (!call.empty()) {
      auto& frame = call.back();
      const auto& out = edges.at(frame.node);
      if (frame.next_edge < out.size()) {
        const ThreadRef next = out[frame.next_edge++];
        if (!index_of.contains(next)) {
          index_of[next] = low[next] = next_index++;
          stack.push_back(next);
          on_stack.insert(next);
          call.push_back({next, 0});
        } else if (on_stack.contains(next)) {
          low[frame.node] = std::min(low[frame.node], index_of[next]);
        }
        continue;
      }
      const ThreadRef node = frame.node;
      call.pop_back();
      if (!call.empty()) low[call.back().node] = std::min(low[call.back().node], low[node]);
      if (low[node] != index_of[node]) continue;
      std::vector<ThreadRef> component;
      ThreadRef member;
      do {
        member = stack.back();
        stack.pop_back();
        on_stack.erase(member);
        component.push_back(member);
      } while (member != node);
      const auto& self_edges = edges.at(node);
      const bool self_loop =
          std::find(self_edges.begin(), self_edges.end(), node) != self_edges.end();
      if (component.size() > 1 || self_loop) {
        std::sort(component.begin(), component.end());
        components.push_back(std::move(component));
      }
    }
  }
  std::sort(components.begin(), components.end());
  return components;
}

std::vector<Deadlock> findDeadlocks(const Edges& edges, const std::unordered_set<Pid>& roots) {
  auto components = cyclicComponents(edges);
  std::unordered_map<ThreadRef, std::size_t> component_of;
  for (std::size_t i = 0; i < components.size(); ++i) {
    for (const auto& t : components[i]) component_of[t] = i;
  }
  std::vector<Deadlock> deadlocks(components.size());
  for (std::size_t i = 0; i < components.size(); ++i) deadlocks[i].threads = components[i];

  // Every stuck thread outside a cycle reaches at least one cycle; it is a spur of each it reaches.
  for (const auto& [start, out] : edges) {
    if (component_of.contains(start)) continue;
    std::unordered_set<ThreadRef> seen{start};
    std::vector<ThreadRef> todo{start};
    std::unordered_set<std::size_t> reached;
    while (!todo.empty()) {
      const ThreadRef cur = todo.back();
      todo.pop_back();
      if (auto c = component_of.find(cur); c != component_of.end()) {
        reached.insert(c->second);
        continue;
      }
      for (const auto& next : edges.at(cur)) {
        if (seen.insert(next).second) todo.push_back(next);
      }
    }
    for (auto c : reached) deadlocks[c].spurs.push_back(start);
  }

  std::vector<Deadlock> kept;
  for (auto& d : deadlocks) {
    std::sort(d.spurs.begin(), d.spurs.end());
    const auto involves_root = [&](const ThreadRef& t) { return roots.contains(t.pid); };
    if (std::any_of(d.threads.begin(), d.threads.end(), involves_root) ||
        std::any_of(d.spurs.begin(), d.spurs.end(), involves_root)) {
      kept.push_back(std::move(d));
    }
  }
  return kept;
}

WaitNode threadNode(const ThreadSample& sample, const ProcessSample* process) {
  WaitNode node;
  node.type = ObjectType::kThread;
  node.status = sample.status;
  node.thread = sample.id;
  node.thread_name = sample.name;
  if (process != nullptr) {
    node.process_name = process->name;
    node.process_title = process->title;
  }
  node.wait_time = sample.wait_time;
  node.context_switches = sample.context_switches;
  return node;
}

WaitNode placeholderThreadNode(ThreadRef ref, ObjectStatus status, const ProcessSample* process) {
  WaitNode node;
  node.type = ObjectType::kThread;
  node.status = status;
  node.thread = ref;
  if (process != nullptr) {
    node.process_name = process->name;
    node.process_title = process->title;
  }
  return node;
}

WaitNode objectNode(const WaitObject& wait) {
  WaitNode node;
  node.type = wait.type;
  node.status = wait.status;
  node.name = wait.name;
  node.detail = wait.detail;
  node.timeout = wait.timeout;
  node.alertable = wait.alertable;
  node.owner_pids = wait.owner_processes;
  return node;
}

/// The thread a chain continues with. A lock's owner thread, always. Of the threads of the
/// processes that hold a pipe, socket or file lock, only a stuck one other than the waiter: it
/// explains the hang, and any other would be an arbitrary pick (the waiter's own process often
/// holds both ends of a socket pair it forked with). A holder process outside the snapshot (not
/// followed) is named by a placeholder of its main thread.
std::optional<ThreadRef> nextOwner(ThreadRef waiter, const WaitObject& wait,
                                   const SnapshotIndex& index, const Edges& stuck) {
  if (wait.status != ObjectStatus::kOwned) return std::nullopt;
  if (!wait.owner_threads.empty())
    return *std::min_element(wait.owner_threads.begin(), wait.owner_threads.end());
  std::optional<ThreadRef> stuck_owner;
  std::optional<ThreadRef> foreign;
  for (const auto pid : wait.owner_processes) {
    const auto* process = index.process(pid);
    if (process == nullptr || process->threads.empty()) {
      const ThreadRef placeholder{pid, Tid{pid.value}};
      if (!foreign || placeholder < *foreign) foreign = placeholder;
      continue;
    }
    for (const auto& t : process->threads) {
      if (t.id != waiter && stuck.contains(t.id) && (!stuck_owner || t.id < *stuck_owner)) {
        stuck_owner = t.id;
      }
    }
  }
  return stuck_owner ? stuck_owner : foreign;
}

/// What a thread does, in a word or two: "running", "blocked on Pipe", "stopped".
std::string threadStateText(const ThreadSample& t) {
  if (SnapshotIndex::isStopped(t)) return "stopped";
  if (t.status == ObjectStatus::kBlocked && t.wait) {
    return std::string("blocked on ") + toString(t.wait->type);
  }
  return asciiLower(toString(t.status));
}

/// "4242 (cat): 1 thread, stopped": what the threads of a process that holds an object do.
std::string holderSummary(const ProcessSample& process) {
  std::string out = std::to_string(process.pid.value) + " (" + process.name +
                    "): " + countOf(process.threads.size(), "thread");
  std::map<std::string, std::size_t> states;
  for (const auto& t : process.threads) ++states[threadStateText(t)];
  for (const auto& [state, n] : states) {
    out += ", ";
    out += process.threads.size() == 1 ? state : std::to_string(n) + " " + state;
  }
  return out;
}

/// Builds chains. Each chain is walked only up to the node limit; the length of the whole chain
/// comes from lengths remembered per thread, so that n threads in one long chain cost O(n), not
/// O(n^2).
///
/// A cycle too long for one chain to show whole (a ring of thousands of threads) is walked once,
/// from its first thread, up to the node limit: every other chain that reaches it ends at the
/// first of its threads it meets, cut there, instead of walking the same ring again. Otherwise
/// a ring of n threads would cost n chains of the whole node limit each, in every sample and in
/// its incident.
class ChainBuilder {
 public:
  ChainBuilder(const SnapshotIndex& index, const Edges& stuck, const GraphOptions& options,
               const std::vector<Deadlock>& deadlocks)
      : index_(index), stuck_(stuck), options_(options) {
    next_.resize(index.threads().size());
    extents_.resize(index.threads().size());
    for (const auto& d : deadlocks) {
      if (2 * d.threads.size() + 1 <= options.max_nodes) continue;
      for (const auto& t : d.threads) long_cycle_of_.emplace(t, d.threads.front());
    }
  }

  WaitChain build(ThreadRef start) {
    WaitChain chain;
    chain.start = start;
    // Most chains are a thread and what it waits on: room for those two at once.
    chain.nodes.reserve(std::min<std::size_t>(options_.max_nodes, 2));
    // A chain holds at most max_nodes nodes: a short vector is cheaper than a hash set here.
    std::vector<ThreadRef> visited;
    ThreadRef cur = start;
    while (chain.nodes.size() < options_.max_nodes) {
      const auto* sample = index_.thread(cur);
      const auto* process = index_.process(cur.pid);
      if (isForeign(cur, start) || sample == nullptr) {
        auto placeholder = placeholderThreadNode(cur, placeholderStatus(cur, start), process);
        if (cur.pid == start.pid) placeholder.thread_name = kExitedThreadName;
        chain.nodes.push_back(std::move(placeholder));
        break;
      }
      chain.nodes.push_back(threadNode(*sample, process));
      if (cur != start && meetsLongCycle(cur, start)) break;
      if (std::find(visited.begin(), visited.end(), cur) != visited.end()) break;
      visited.push_back(cur);
      if (!isWaiting(*sample) || chain.nodes.size() >= options_.max_nodes) break;
      chain.nodes.push_back(objectNode(*sample->wait));
      auto next = successor(cur);
      if (!sample->wait->owner_processes.empty() &&
          (!next || isForeign(*next, start) || index_.thread(*next) == nullptr)) {
        // The chain ends at an object held by processes: say what their threads do.
        auto holders = holderStates(*sample->wait);
        if (!holders.empty()) {
          auto& detail = chain.nodes.back().detail;
          detail += detail.empty() ? holders : "; " + holders;
        }
      }
      if (!next) break;
      cur = *next;
    }
    const Extent whole = extent(start);
    chain.node_count = whole.nodes;
    chain.truncated = whole.nodes > chain.nodes.size();
    // A cut chain does not show its loop: it says truncated, not cycle.
    chain.is_cycle = whole.cycle && !chain.truncated;
    return chain;
  }

 private:
  [[nodiscard]] bool isForeign(ThreadRef t, ThreadRef start) const {
    return t.pid != start.pid && !options_.out_of_proc;
  }

  /// "holder 4242 (cat): 1 thread, stopped" for each process that holds the object of `wait`.
  /// Each process is summed up once: a pool of threads all waiting on one pipe stays O(n).
  std::string holderStates(const WaitObject& wait) {
    std::string out;
    for (const auto pid : wait.owner_processes) {
      const auto* process = index_.process(pid);
      if (process == nullptr) continue;
      auto it = holder_summaries_.find(pid);
      if (it == holder_summaries_.end()) {
        it = holder_summaries_.emplace(pid, holderSummary(*process)).first;
      }
      out += (out.empty() ? "holder " : "; holder ") + it->second;
    }
    return out;
  }

  /// Whether `t` is a thread of a cycle too long to show whole that the chain from `start` does
  /// not walk (it is walked by the chain of its first thread).
  [[nodiscard]] bool meetsLongCycle(ThreadRef t, ThreadRef start) const {
    const auto it = long_cycle_of_.find(t);
    return it != long_cycle_of_.end() && it->second != start;
  }

  [[nodiscard]] static ObjectStatus placeholderStatus(ThreadRef t, ThreadRef start) {
    // Outside the snapshot: another process, not followed or not readable (PidOnly), or a
    // thread of this one that exited while it was read (Unknown, named "(exited)").
    return t.pid == start.pid ? ObjectStatus::kUnknown : ObjectStatus::kPidOnly;
  }

  [[nodiscard]] static bool isWaiting(const ThreadSample& s) {
    return s.status == ObjectStatus::kBlocked && s.wait.has_value();
  }

  std::optional<ThreadRef> successor(ThreadRef t) {
    const auto* e = index_.entry(t);
    if (e == nullptr) return std::nullopt;
    auto& next = next_[e->ordinal];
    if (!next) {
      next.emplace(isWaiting(*e->sample) ? nextOwner(t, *e->sample->wait, index_, stuck_)
                                         : std::nullopt);
    }
    return *next;
  }

  /// What the whole chain from a thread is: its node count and whether it ends in a cycle.
  struct Extent {
    std::uint32_t nodes = 0;
    bool cycle = false;
  };

  /// Walks until a remembered thread, the end of the chain or a cycle, then remembers every
  /// thread on the way.
  Extent extent(ThreadRef start) {
    std::vector<std::size_t> path;  // the ordinals of the threads walked
    std::unordered_map<std::size_t, std::size_t> position;
    Extent tail;  // the chain after path.back()'s object node
    ThreadRef cur = start;
    while (true) {
      const auto* entry = index_.entry(cur);
      if (isForeign(cur, start) || entry == nullptr) {
        tail = {1, false};  // a placeholder node; not remembered, it depends on the start
        break;
      }
      if (const auto& known = extents_[entry->ordinal]) {
        tail = *known;
        break;
      }
      if (auto it = position.find(entry->ordinal); it != position.end()) {
        // A cycle of L threads: each of its threads starts a chain of 2L + 1 nodes. Only a loop
        // of stuck threads is a cycle; one closed by a timed wait is a loop that will open.
        const auto cycle = static_cast<std::uint32_t>(path.size() - it->second);
        tail = {2 * cycle + 1, stuck_.contains(cur)};
        for (std::size_t i = it->second; i < path.size(); ++i) extents_[path[i]] = tail;
        path.resize(it->second);
        break;
      }
      const bool waiting = isWaiting(*entry->sample);
      auto next = waiting ? successor(cur) : std::nullopt;
      if (!next) {
        tail = {waiting ? 2U : 1U, false};
        extents_[entry->ordinal] = tail;
        break;
      }
      position.emplace(entry->ordinal, path.size());
      path.push_back(entry->ordinal);
      cur = *next;
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      tail.nodes += 2;
      extents_[*it] = tail;
    }
    const auto* first = index_.entry(start);
    return first != nullptr && extents_[first->ordinal] ? *extents_[first->ordinal] : tail;
  }

  const SnapshotIndex& index_;
  const Edges& stuck_;
  const GraphOptions& options_;
  /// By the ordinal of each thread of the snapshot: its successor once asked (nullopt inside
  /// when it has none) and the extent of the chain from it once known.
  std::vector<std::optional<std::optional<ThreadRef>>> next_;
  std::vector<std::optional<Extent>> extents_;
  std::unordered_map<Pid, std::string> holder_summaries_;
  /// Each thread of a cycle too long to show whole, and the first thread of its cycle.
  std::unordered_map<ThreadRef, ThreadRef> long_cycle_of_;
};

}  // namespace

GraphAnalysis analyzeWaitGraph(const Snapshot& snapshot, std::span<const Pid> roots,
                               const GraphOptions& options) {
  const SnapshotIndex index(snapshot, options.timed_wait_bound);
  const Edges stuck = stuckEdges(index);
  const std::unordered_set<Pid> root_set(roots.begin(), roots.end());

  GraphAnalysis out;
  out.deadlocks = findDeadlocks(stuck, root_set);
  ChainBuilder builder(index, stuck, options, out.deadlocks);
  std::size_t root_threads = 0;
  for (const auto& process : snapshot.processes) {
    if (root_set.contains(process.pid)) root_threads += process.threads.size();
  }
  out.chains.reserve(root_threads);
  for (const auto& process : snapshot.processes) {
    if (!root_set.contains(process.pid)) continue;
    for (const auto& thread : process.threads) {
      if (options.chain_filter && !options.chain_filter(thread) && !stuck.contains(thread.id)) {
        continue;
      }
      out.chains.push_back(builder.build(thread.id));
    }
  }
  return out;
}

}  // namespace wctmon
