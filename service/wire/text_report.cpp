#include "wire/text_report.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/format.h"
#include "model/incident.h"

namespace wctmon::wire {
namespace {

std::string describe(const WaitNode& node, const WaitNode* next) {
  if (node.isThread()) {
    std::string s = threadLabel(node.thread);
    if (!node.thread_name.empty()) s += " " + node.thread_name;
    if (!node.process_name.empty())
      s += " (" + withTitle(node.process_name, node.process_title) + ")";
    s += " " + std::string(toString(node.status));
    if (node.wait_time) s += " " + durationText(*node.wait_time);
    return s;
  }
  std::string s = "[" + std::string(toString(node.type)) + " " + node.name;
  if (node.status == ObjectStatus::kOwned && !node.owner_pids.empty()) {
    s += " held by pid";
    for (const auto pid : node.owner_pids) s += " " + std::to_string(pid.value);
  } else if (node.status == ObjectStatus::kOwned && next != nullptr) {
    s += " owned by " + threadLabel(next->thread);
  } else {
    s += " " + std::string(toString(node.status));
  }
  if (node.timeout) s += ", times out in " + durationText(*node.timeout);
  s += "]";
  if (!node.detail.empty()) s += " " + node.detail;
  return s;
}

/// A chain whose last thread is one it already passed, without being a cycle: a loop that will
/// open by itself (a timed wait in it) or that kept changing between reads.
bool loopsBack(const WaitChain& chain) {
  if (chain.is_cycle || chain.truncated || chain.nodes.size() < 3) return false;
  const auto& last = chain.nodes.back();
  return last.isThread() &&
         std::any_of(chain.nodes.begin(), chain.nodes.end() - 1,
                     [&](const WaitNode& n) { return n.isThread() && n.thread == last.thread; });
}

/// The soonest timeout of the waits in the cycle of `deadlock`, as its chains show them.
std::optional<std::chrono::milliseconds> soonestTimeout(const AnalysisResult& result,
                                                        const Deadlock& deadlock) {
  std::optional<std::chrono::milliseconds> out;
  for (const auto& chain : result.chains) {
    if (std::find(deadlock.threads.begin(), deadlock.threads.end(), chain.start) ==
            deadlock.threads.end() ||
        chain.nodes.size() < 2 || !chain.nodes[1].timeout) {
      continue;
    }
    if (!out || *chain.nodes[1].timeout < *out) out = chain.nodes[1].timeout;
  }
  return out;
}

/// How many waiting goroutines of a Go program the text lists, and how many frames of each: the
/// JSON has them all.
constexpr std::size_t kListedGoroutines = 20;
constexpr std::size_t kGoroutineFrames = 12;

/// The goroutines of a Go program: those waiting on locks first, then the others, each with
/// its frames; the rest counted by what they wait on.
void writeGoProgram(std::ostream& out, const GoProgram& go) {
  const auto version = go.version.empty() ? std::string("unknown") : go.version;
  if (!go.visible) {
    out << "process " << go.pid.value
        << " is a Go program whose goroutines are not visible (Go version " << version
        << "): " << go.note << "\n";
    return;
  }
  out << "Go program " << go.pid.value << " (" << version
      << "): " << countOf(go.goroutines, "goroutine") << ", " << go.blocked.size()
      << " of the program's"
      << " waiting" << (go.note.empty() ? "" : "; " + go.note) << "\n";
  std::vector<const Goroutine*> order;
  for (const auto& g : go.blocked) order.push_back(&g);
  std::stable_partition(order.begin(), order.end(), [](const auto* g) { return g->lock_wait; });
  std::map<std::string, std::size_t> rest;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& g = *order[i];
    if (i >= kListedGoroutines) {
      ++rest[g.waits_on];
      continue;
    }
    out << "  goroutine " << g.id << " waits on " << g.waits_on;
    if (g.waits_on != g.wait_reason) out << " (" << g.wait_reason << ")";
    if (g.waited) out << ", for at least " << durationText(*g.waited);
    if (g.lock_wait) out << ": a lock that records no owner";
    out << "\n";
    for (std::size_t f = 0; f < g.frames.size() && f < kGoroutineFrames; ++f) {
      const auto& frame = g.frames[f];
      out << "    #" << f << " " << hexString(frame.pc) << " "
          << (frame.function.empty() ? "??" : frame.function + "+" + hexString(frame.offset))
          << "\n";
    }
    if (g.frames.size() > kGoroutineFrames) {
      out << "    ... " << countOf(g.frames.size() - kGoroutineFrames, "more frame") << "\n";
    }
  }
  if (!rest.empty()) {
    out << "  ... " << countOf(order.size() - kListedGoroutines, "more waiting goroutine") << ":";
    bool first = true;
    for (const auto& [what, n] : rest) {
      out << (first ? " " : ", ") << n << " " << what;
      first = false;
    }
    out << "\n";
  }
}

}  // namespace

void writeChain(std::ostream& out, const WaitChain& chain, std::size_t indent) {
  for (std::size_t i = 0; i < chain.nodes.size(); ++i) {
    out << std::string(indent + (i == 0 ? 0 : 2 + 2 * (i - 1)), ' ') << (i == 0 ? "" : "-> ")
        << describe(chain.nodes[i], i + 1 < chain.nodes.size() ? &chain.nodes[i + 1] : nullptr);
    if (i + 1 == chain.nodes.size() && chain.is_cycle) out << "  <== CYCLE";
    if (i + 1 == chain.nodes.size() && loopsBack(chain)) out << "  <== loops back, not a deadlock";
    out << "\n";
  }
  if (chain.truncated) {
    out << std::string(indent + 2, ' ') << "... chain truncated at " << chain.nodes.size() << " of "
        << chain.node_count << " nodes\n";
  }
}

void writeCapture(std::ostream& out, const ThreadCapture& capture, std::size_t indent,
                  std::size_t max_frames) {
  const std::string pad(indent, ' ');
  out << pad << "capture " << threadLabel(capture.thread);
  if (!capture.captured) {
    out << ": " << capture.error << "\n";
    return;
  }
  out << " (" << capture.architecture << ", ";
  if (capture.method == CaptureMethod::kStopped) {
    out << "stopped " << capture.stop_time.count() / 1000 << " us)";
  } else {
    out << "not stopped)";
  }
  if (!capture.error.empty()) out << " " << capture.error;
  out << "\n";
  if (!capture.note.empty()) out << pad << "  " << capture.note << "\n";
  for (std::size_t i = 0; i < capture.frames.size() && i < max_frames; ++i) {
    const auto& f = capture.frames[i];
    out << pad << "  #" << i << " " << hexString(f.pc) << " "
        << (f.function.empty() ? "??" : f.function + "+" + hexString(f.offset))
        << (f.module.empty() ? "" : " (" + f.module + ")") << (f.scanned ? " [scanned]" : "")
        << (f.file.empty() ? "" : " at " + f.file + ":" + std::to_string(f.line)) << "\n";
  }
  if (capture.frames.size() > max_frames) {
    out << pad << "  ... " << countOf(capture.frames.size() - max_frames, "more frame") << "\n";
  }
  if (!capture.runtime_stack) return;
  const auto& stack = *capture.runtime_stack;
  out << pad << "  " << stack.runtime << " frames (" << stack.source << "):\n";
  for (std::size_t i = 0; i < stack.frames.size() && i < max_frames; ++i) {
    const auto& f = stack.frames[i];
    out << pad << "  #" << i << " " << f.function;
    if (!f.file.empty())
      out << " at " << f.file << (f.line > 0 ? ":" + std::to_string(f.line) : "");
    if (!f.module.empty()) out << " (" << f.module << ")";
    out << "\n";
  }
  if (stack.frames.size() > max_frames) {
    out << pad << "  ... " << countOf(stack.frames.size() - max_frames, "more frame") << "\n";
  }
}

void writeTextReport(std::ostream& out, const AnalysisResult& result, bool only_waiting) {
  if (result.pid.value != 0) {
    out << "process " << result.pid.value << " ("
        << withTitle(result.process_name, result.process_title) << "): ";
  } else {
    out << countOf(result.process_count, "process") << ": ";
  }
  out << countOf(result.thread_count, "thread") << ", "
      << countOf(result.deadlocks.size(), "deadlock");
  // A cycle through locks that record no owner cannot be seen: "0 deadlocks" alone would say
  // more than is known.
  const auto unowned = std::count_if(result.chains.begin(), result.chains.end(), [](const auto& c) {
    return c.nodes.size() >= 2 && c.nodes[1].type == ObjectType::kUnownedLock;
  });
  if (unowned > 0) {
    out << "; " << countOf(static_cast<std::size_t>(unowned), "thread")
        << (unowned == 1 ? " waits" : " wait") << " on locks whose owner is not recorded";
  }
  // Goroutines are not threads: a Go ABBA is two goroutines waiting on sync.Mutex, which
  // records no owner.
  std::size_t goroutine_locks = 0;
  for (const auto& go : result.go_programs) {
    goroutine_locks += static_cast<std::size_t>(std::count_if(
        go.blocked.begin(), go.blocked.end(), [](const auto& g) { return g.lock_wait; }));
  }
  if (goroutine_locks > 0) {
    out << "; " << countOf(goroutine_locks, "goroutine")
        << (goroutine_locks == 1 ? " waits" : " wait") << " on locks whose owner is not recorded";
  }
  out << "\n";
  for (const auto& w : result.warnings) out << "warning: " << w << "\n";

  int n = 0;
  for (const auto& d : result.deadlocks) {
    out << "DEADLOCK #" << ++n << (d.crossProcess() ? " (across processes)" : "") << ":";
    for (const auto& t : d.threads) out << " " << threadLabel(t);
    if (!d.spurs.empty()) {
      out << "; also blocked on it:";
      for (const auto& t : d.spurs) out << " " << threadLabel(t);
    }
    if (const auto timeout = soonestTimeout(result, d)) {
      out << "; a wait in it times out in " << durationText(*timeout);
    }
    out << "\n";
  }

  for (const auto& c : result.captures) writeCapture(out, c, 0, c.frames.size());
  for (const auto& go : result.go_programs) writeGoProgram(out, go);

  out << "\n";
  for (const auto& chain : result.chains) {
    if (only_waiting && !leadsSomewhere(chain)) continue;
    writeChain(out, chain);
  }
}

}  // namespace wctmon::wire
