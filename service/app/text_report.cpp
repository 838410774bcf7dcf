#include "app/text_report.h"

#include <string>

#include "core/format.h"

namespace wctmon::app {
namespace {

std::string describe(const WaitNode& node, const WaitNode* next) {
  if (node.isThread()) {
    std::string s = threadLabel(node.thread);
    if (!node.thread_name.empty()) s += " " + node.thread_name;
    if (!node.process_name.empty()) s += " (" + node.process_name + ")";
    s += " " + std::string(toString(node.status));
    if (node.wait_time) s += ", waiting " + std::to_string(node.wait_time->count()) + " ms";
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
  if (node.timeout) s += ", timeout " + std::to_string(node.timeout->count()) + " ms";
  s += "]";
  if (!node.detail.empty()) s += " " + node.detail;
  return s;
}

bool interesting(const WaitChain& chain) { return chain.nodes.size() > 2 || chain.is_cycle; }

}  // namespace

void writeChain(std::ostream& out, const WaitChain& chain, std::size_t indent) {
  for (std::size_t i = 0; i < chain.nodes.size(); ++i) {
    out << std::string(indent + (i == 0 ? 0 : 2 + 2 * (i - 1)), ' ') << (i == 0 ? "" : "-> ")
        << describe(chain.nodes[i], i + 1 < chain.nodes.size() ? &chain.nodes[i + 1] : nullptr);
    if (i + 1 == chain.nodes.size() && chain.is_cycle) out << "  <== CYCLE";
    out << "\n";
  }
  if (chain.truncated) {
    out << std::string(indent + 2, ' ') << "... chain truncated at " << chain.nodes.size() << " of "
        << chain.node_count << " nodes\n";
  }
}

void writeTextReport(std::ostream& out, const AnalysisResult& result, bool only_waiting) {
  if (result.pid.value != 0) {
    out << "process " << result.pid.value << " (" << result.process_name << "): ";
  } else {
    out << result.process_count << " processes: ";
  }
  out << result.thread_count << " threads, " << result.deadlocks.size()
      << (result.deadlocks.size() == 1 ? " deadlock" : " deadlocks") << "\n";
  for (const auto& w : result.warnings) out << "warning: " << w << "\n";

  int n = 0;
  for (const auto& d : result.deadlocks) {
    out << "DEADLOCK #" << ++n << (d.crossProcess() ? " (across processes)" : "") << ":";
    for (const auto& t : d.threads) out << " " << threadLabel(t);
    if (!d.spurs.empty()) {
      out << "; also blocked on it:";
      for (const auto& t : d.spurs) out << " " << threadLabel(t);
    }
    out << "\n";
  }

  for (const auto& c : result.captures) {
    out << "capture " << threadLabel(c.thread);
    if (!c.captured) {
      out << ": " << c.error << "\n";
      continue;
    }
    out << " (" << c.architecture << ", stopped " << c.stop_time.count() / 1000 << " us)";
    if (!c.error.empty()) out << " " << c.error;
    out << "\n";
    for (std::size_t i = 0; i < c.frames.size(); ++i) {
      const auto& f = c.frames[i];
      out << "  #" << i << " " << hexString(f.pc) << " "
          << (f.function.empty() ? "??" : f.function + "+" + hexString(f.offset)) << " "
          << (f.module.empty() ? "" : "(" + f.module + ")") << "\n";
    }
  }

  out << "\n";
  for (const auto& chain : result.chains) {
    if (only_waiting && !interesting(chain)) continue;
    writeChain(out, chain);
  }
}

}  // namespace wctmon::app
