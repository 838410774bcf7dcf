#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/wait_model.h"

namespace wctmon::linux_platform {

/// What a stopped thread left behind: its registers (DWARF order rax..r15, rip) and a copy of the
/// top of its stack, so that unwinding can run after the thread is released.
struct StackCopy {
  std::uint64_t regs[17] = {};
  std::uint64_t sp = 0;
  std::vector<std::byte> bytes;  // starting at sp
};

/// Unwinds a captured x86-64 stack with elfutils' CFI unwinder and symbolises each frame
/// (demangled C++ names). Reads the copy first and the live process only for what the copy
/// lacks. Returns at most `max_frames` frames; `error` says why unwinding stopped early.
[[nodiscard]] std::vector<StackFrame> unwindStack(Pid pid, Tid tid, const StackCopy& copy,
                                                  std::size_t max_frames, std::string& error);

}  // namespace wctmon::linux_platform
