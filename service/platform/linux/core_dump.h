#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/ports/process_dumper.h"
#include "model/ids.h"
#include "model/result.h"

namespace wctmon::linux_platform {

struct CoreDumpOptions {
  /// Also the contents of file-backed mappings the process has not written (code, read-only
  /// data), which the kernel's default coredump_filter leaves out: a debugger reads them from
  /// the files the core names (NT_FILE).
  bool file_backed = false;
  /// Memory is written up to this many bytes of file (0: all of it); a core cut short says so.
  std::uint64_t max_bytes = 0;
  /// The diagnosis, carried as a note of its own (kDumpDiagnosisOwner, kDumpDiagnosisType).
  std::string diagnosis = {};
};

/// How one thread of a core was read.
struct DumpedThread {
  ThreadRef thread;
  /// Held in a ptrace stop for its registers (all of them, FP state too); otherwise read without
  /// stopping: what a blocked system call shows (rip, rsp, the call's arguments), and why.
  bool stopped = false;
  std::string not_stopped_because;
  std::chrono::nanoseconds held{0};
};

struct CoreDump {
  std::uint64_t bytes = 0;
  std::vector<DumpedThread> threads;
  /// Bytes of memory no read could reach, written as zeros.
  std::uint64_t unreadable_bytes = 0;
  /// Memory left out because the core reached CoreDumpOptions::max_bytes.
  bool cut = false;
};

/// Writes an ELF core of process `pid` to `path` (a new file, 0600), as gcore does: every
/// thread's registers (NT_PRSTATUS, NT_PRFPREG), the process (NT_PRPSINFO, NT_SIGINFO,
/// NT_AUXV), the files it maps (NT_FILE) and the memory of its anonymous and written mappings
/// (and of the first page of each mapped ELF file, for its build id). A thread is held only for
/// its registers, one at a time, and only when its system call restarts unchanged after a stop
/// (the capture's rule); any other is read without stopping, and the result says which was
/// which. The memory is read without stopping anything. A core that cannot be written whole
/// (the process gone, a full disk) leaves no file behind.
[[nodiscard]] Result<CoreDump> writeCoreDump(Pid pid, const std::filesystem::path& path,
                                             const CoreDumpOptions& options);

/// The ProcessDumper of Linux: writeCoreDump.
class CoreDumper final : public ProcessDumper {
 public:
  [[nodiscard]] Result<DumpWritten> dump(Pid pid, const DumpRequest& request) override;
  [[nodiscard]] std::string_view extension() const override { return ".core"; }
};

}  // namespace wctmon::linux_platform
