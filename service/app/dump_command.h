#pragma once

#include <cstdint>
#include <string>

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

}  // namespace wctmon::app
