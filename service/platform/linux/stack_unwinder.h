#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/wait_model.h"

namespace wctmon::linux_platform {

/// DWARF numbers of the x86-64 registers a StackCopy holds.
enum DwarfRegister : unsigned {
  kDwarfRax = 0,
  kDwarfRdx = 1,
  kDwarfRcx = 2,
  kDwarfRbx = 3,
  kDwarfRsi = 4,
  kDwarfRdi = 5,
  kDwarfRbp = 6,
  kDwarfRsp = 7,
  kDwarfR8 = 8,
  kDwarfR9 = 9,
  kDwarfR10 = 10,
  kDwarfRip = 16,
  kDwarfRegisterCount = 17,
};

/// What a thread left behind: its registers (DWARF order rax..r15, rip), which of them are
/// known, and a copy of the top of its stack, so that unwinding can run after the thread is
/// released (or without ever stopping it).
struct StackCopy {
  static constexpr std::uint32_t kAllRegisters = (1U << kDwarfRegisterCount) - 1;
  std::uint64_t regs[kDwarfRegisterCount] = {};
  /// Bit n set: regs[n] is known. A thread read without stopping it shows only some.
  std::uint32_t known = kAllRegisters;
  std::uint64_t sp = 0;
  std::vector<std::byte> bytes;  // starting at sp
};

/// How far one unwinding may go.
struct UnwindLimits {
  /// Debug information that one unwinding may unpack in memory, in bytes. The separate debug
  /// files of Debian's -dbg and -dbgsym packages keep their sections compressed, and elfutils
  /// unpacks a module's sections whole the first time a frame needs its symbols, source line or
  /// call frame information, then builds its tables on them: libc's 4 MB debug file unpacks to
  /// 9 MB, and the unwinding's heap peaks at 16 MB. A large server's debug file unpacks to GBs,
  /// which would end the service at its memory limit. A debug file that would pass the budget
  /// is not read: that module's frames are named from its own dynamic symbols, with no line.
  static constexpr std::uint64_t kDefaultUnpackBytes = 64ULL << 20;
  std::size_t max_frames = 64;
  /// When unwinding stops early (registers it needs are unknown), scan the rest of the copy for
  /// return addresses (words that point just after a call instruction in executable memory),
  /// marked `scanned`.
  bool scan = false;
  std::uint64_t unpack_bytes = kDefaultUnpackBytes;
};

/// What one unwinding found.
struct Unwinding {
  std::vector<StackFrame> frames;
  /// Why unwinding stopped early; empty when it did not.
  std::string error;
  /// Debug information left out, and why; empty when none was.
  std::string note;
};

/// Unwinds a captured x86-64 stack with elfutils' CFI unwinder and symbolises each frame
/// (demangled C++ names). Reads the copy first and the live process only for what the copy
/// lacks. Returns at most `limits.max_frames` frames.
[[nodiscard]] Unwinding unwindStack(Pid pid, Tid tid, const StackCopy& copy,
                                    const UnwindLimits& limits);

}  // namespace wctmon::linux_platform
