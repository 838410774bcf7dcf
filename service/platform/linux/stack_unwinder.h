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

/// Unwinds a captured x86-64 stack with elfutils' CFI unwinder and symbolises each frame
/// (demangled C++ names). Reads the copy first and the live process only for what the copy
/// lacks. With `scan`, when unwinding stops early (registers it needs are unknown), the rest of
/// the copy is scanned for return addresses (words that point just after a call instruction in
/// executable memory), marked `scanned`. Returns at most `max_frames` frames; `error` says why
/// unwinding stopped early.
[[nodiscard]] std::vector<StackFrame> unwindStack(Pid pid, Tid tid, const StackCopy& copy,
                                                  std::size_t max_frames, std::string& error,
                                                  bool scan = false);

}  // namespace wctmon::linux_platform
