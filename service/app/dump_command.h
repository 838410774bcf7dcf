#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/wait_graph.h"
#include "model/wait_model.h"

namespace wctmon::app {

struct DumpArgs {
  int pid = 0;
  /// The dump's path; empty: wctmon-PID-TIME.core (.dmp on Windows) in the current directory.
  std::string out;
  bool full_memory = false;
  /// The most MiB of memory it holds; 0: no cap.
  std::uint64_t max_mib = 0;
};

/// `wctmon dump --pid PID`: analyses the process once, writes a dump a debugger opens with that
/// diagnosis inside, and the diagnosis beside it (PATH.json). Exit 0, 3 when the diagnosis holds
/// a deadlock, 1 with one line on stderr when no dump could be written.
[[nodiscard]] int runDump(const DumpArgs& args);

/// `wctmon dump info FILE`: the dump's format and the diagnosis wctmon put inside it. Exit 0, 1
/// when the file is no dump or carries no diagnosis.
[[nodiscard]] int runDumpInfo(const std::string& file);

struct AnalyzeCoreArgs {
  std::string core;
  /// Where the core's executable is now; empty: where the core says it was.
  std::string exe;
  bool json = false;
  bool brief = false;
  std::uint32_t max_nodes = kDefaultMaxNodes;
  std::chrono::milliseconds timed_wait_bound = kDefaultTimedWaitBound;
};

/// `wctmon analyze --core FILE [--exe PATH]`: the wait chains and deadlocks of the moment a core
/// holds, printed as `analyze --pid` prints them, with the diagnosis wctmon recorded inside the
/// core (a core of `wctmon dump`) beside them. Exit 0, 3 when a deadlock is found, 1 with one line
/// on stderr when the file is no core that can be read.
[[nodiscard]] int runAnalyzeCore(const AnalyzeCoreArgs& args);

/// Prints an analysis as `wctmon analyze` does: the proto3 JSON mapping, or the text report
/// (only the chains that lead somewhere when `brief`), names escaped for the terminal.
void printAnalysis(const AnalysisResult& result, bool json, bool brief);

}  // namespace wctmon::app
