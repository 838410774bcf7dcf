#include "platform/linux/core_notes.h"

#include <elf.h>
#include <sys/procfs.h>

#include <cstring>
#include <string_view>

namespace wctmon::linux_platform {
namespace {

constexpr std::string_view kCoreOwner = "CORE";
constexpr std::uint32_t kNtFile = 0x46494c45;  // NT_FILE, absent from older <elf.h>

Error tooShort(const char* what) {
  return makeError(ErrorCode::kDamaged, std::string("the core's ") + what + " note is cut short");
}

/// A NUL-padded text field of a note.
std::string field(const char* text, std::size_t size) {
  return std::string(text, ::strnlen(text, size));
}

/// NT_FILE: count and page size, then (start, end, offset in pages) of each mapping, then their
/// paths, each ending with a NUL.
Result<std::vector<CoreFileMapping>> readFiles(std::string_view desc) {
  std::uint64_t head[2];
  if (desc.size() < sizeof head) return tooShort("NT_FILE");
  std::memcpy(head, desc.data(), sizeof head);
  const auto [count, page] = std::pair{head[0], head[1]};
  constexpr std::uint64_t kEntry = 3 * sizeof(std::uint64_t);
  if (count > (desc.size() - sizeof head) / kEntry) return tooShort("NT_FILE");
  std::vector<CoreFileMapping> out(count);
  std::size_t names = sizeof head + count * kEntry;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t entry[3];
    std::memcpy(entry, desc.data() + sizeof head + i * kEntry, sizeof entry);
    out[i].begin = entry[0];
    out[i].end = entry[1];
    out[i].offset = entry[2] * page;
    const auto nul = desc.find('\0', names);
    if (nul == std::string_view::npos) return tooShort("NT_FILE");
    out[i].path = std::string(desc.substr(names, nul - names));
    names = nul + 1;
  }
  return out;
}

}  // namespace

Result<CoreProcess> readCoreProcess(std::span<const wire::ElfNote> notes) {
  CoreProcess out;
  for (const auto& note : notes) {
    if (note.name != kCoreOwner) continue;
    if (note.type == NT_PRSTATUS) {
      elf_prstatus status{};
      if (note.desc.size() < sizeof status) return tooShort("NT_PRSTATUS");
      std::memcpy(&status, note.desc.data(), sizeof status);
      CoreThread thread;
      thread.tid = status.pr_pid;
      thread.signal = status.pr_cursig;
      static_assert(sizeof status.pr_reg == sizeof thread.regs);
      std::memcpy(&thread.regs, &status.pr_reg, sizeof thread.regs);
      // The first thread's status carries the process's ids as well.
      if (out.threads.empty() && out.pid == 0) out.ppid = status.pr_ppid;
      out.threads.push_back(thread);
    } else if (note.type == NT_PRPSINFO) {
      elf_prpsinfo info{};
      if (note.desc.size() < sizeof info) return tooShort("NT_PRPSINFO");
      std::memcpy(&info, note.desc.data(), sizeof info);
      out.pid = info.pr_pid;
      out.ppid = info.pr_ppid;
      out.name = field(info.pr_fname, sizeof info.pr_fname);
      out.args = field(info.pr_psargs, sizeof info.pr_psargs);
    } else if (note.type == kNtFile) {
      auto files = readFiles(note.desc);
      if (!files) return files.error();
      out.files = std::move(*files);
    }
  }
  if (out.threads.empty()) {
    return makeError(ErrorCode::kDamaged, "the core holds no thread (no NT_PRSTATUS note)");
  }
  // A core without NT_PRPSINFO: its first thread is the one that was dumped first, in a kernel
  // core the one that took the signal; the process is named by it.
  if (out.pid == 0) out.pid = out.threads.front().tid;
  return out;
}

SyscallState syscallStateOf(const user_regs_struct& regs) {
  SyscallState out;
  out.sp = regs.rsp;
  out.pc = regs.rip;
  if (static_cast<long long>(regs.orig_rax) < 0) {
    out.kind = SyscallState::Kind::kRunning;
    return out;
  }
  out.kind = SyscallState::Kind::kInSyscall;
  out.number = static_cast<long>(regs.orig_rax);
  out.args = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
  return out;
}

std::vector<std::uint64_t> parkedRegisterValues(const user_regs_struct& regs) {
  return {regs.rbx, regs.rbp, regs.r12, regs.r13, regs.r14, regs.r15, regs.rdi,
          regs.rsi, regs.rdx, regs.rcx, regs.r8,  regs.r9,  regs.r10, regs.r11};
}

}  // namespace wctmon::linux_platform
