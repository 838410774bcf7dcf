#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "model/dump_format.h"
#include "model/ids.h"
#include "model/result.h"

namespace wctmon {

/// What a dump is asked for.
struct DumpRequest {
  /// A new file: an existing one is never replaced.
  std::filesystem::path path;
  /// The most bytes of memory it holds (0: no cap); a dump cut at it says so.
  std::uint64_t max_bytes = 0;
  /// All of the process's memory, code and read-only file data included (a debugger reads those
  /// from the files otherwise).
  bool full_memory = false;
  /// Carried inside the dump: an ELF note "WCTMON", a minidump user stream.
  std::string diagnosis = {};
};

/// A dump written.
struct DumpWritten {
  std::uint64_t bytes = 0;
  /// "elf-core", "minidump".
  std::string format;
  /// How it was taken, in words: which threads were held for their registers and which were
  /// read without stopping, memory that could not be read, a cut at the cap.
  std::string method;
};

/// Writes a dump of a process that a debugger opens: an ELF core on Linux (gdb, lldb), a
/// minidump on Windows (WinDbg, lldb). No thread is left stopped or suspended on any path.
class ProcessDumper {
 public:
  virtual ~ProcessDumper() = default;

  [[nodiscard]] virtual Result<DumpWritten> dump(Pid pid, const DumpRequest& request) = 0;
  /// The file name ending of its dumps: ".core", ".dmp".
  [[nodiscard]] virtual std::string_view extension() const = 0;
};

}  // namespace wctmon
