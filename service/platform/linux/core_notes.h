// What the notes of a Linux x86-64 core say of its process: its threads' registers
// (NT_PRSTATUS), its name (NT_PRPSINFO) and the files it mapped (NT_FILE), as the kernel, gdb's
// gcore, systemd-coredump and wctmon's own writer lay them out.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/result.h"
#include "platform/linux/proc_text.h"
#include "wire/elf_core.h"

namespace wctmon::linux_platform {

/// One thread of a core.
struct CoreThread {
  std::int32_t tid = 0;
  user_regs_struct regs{};
  /// The signal the thread was taking when the core was written (the one that killed the
  /// process), 0 for none.
  int signal = 0;
};

/// A file mapping of a core's process (NT_FILE): its addresses, where in the file it starts and
/// the file's path as it was when the core was written.
struct CoreFileMapping {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;
  std::string path;
};

/// The process of a core, as its notes say.
struct CoreProcess {
  std::int32_t pid = 0;
  std::int32_t ppid = 0;
  /// The command name (pr_fname, 15 characters at most) and the start of its arguments.
  std::string name;
  std::string args;
  std::vector<CoreThread> threads;
  std::vector<CoreFileMapping> files;
};

/// Reads the process of a core from its notes. A core with no thread (no NT_PRSTATUS), or one
/// whose notes are too short for their kind, is an error.
[[nodiscard]] Result<CoreProcess> readCoreProcess(std::span<const wire::ElfNote> notes);

/// Where a thread of a core was, from its registers: in a system call when orig_rax holds one
/// (the kernel keeps the number there while the call sleeps, and interrupted by the stop that
/// wrote the core the call shows -ERESTART* in rax), with its arguments in rdi, rsi, rdx, r10,
/// r8, r9; running outside one otherwise.
[[nodiscard]] SyscallState syscallStateOf(const user_regs_struct& regs);

/// The registers of a parked thread that may still point to what it waited for: those a callee
/// keeps and those that passed arguments.
[[nodiscard]] std::vector<std::uint64_t> parkedRegisterValues(const user_regs_struct& regs);

}  // namespace wctmon::linux_platform
