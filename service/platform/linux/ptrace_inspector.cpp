#include "platform/linux/ptrace_inspector.h"

#include <elf.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "platform/linux/proc_text.h"
#include "platform/linux/ptrace_stop.h"
#include "platform/linux/stack_unwinder.h"
#include "platform/linux/syscall_names.h"

namespace wctmon::linux_platform {
namespace {

void addRegisters(const user_regs_struct& r, ThreadCapture& out) {
  const std::pair<const char*, unsigned long long> regs[] = {
      {"rip", r.rip},
      {"rsp", r.rsp},
      {"rbp", r.rbp},
      {"rax", r.rax},
      {"rbx", r.rbx},
      {"rcx", r.rcx},
      {"rdx", r.rdx},
      {"rsi", r.rsi},
      {"rdi", r.rdi},
      {"r8", r.r8},
      {"r9", r.r9},
      {"r10", r.r10},
      {"r11", r.r11},
      {"r12", r.r12},
      {"r13", r.r13},
      {"r14", r.r14},
      {"r15", r.r15},
      {"eflags", r.eflags},
      {"orig_rax", r.orig_rax},
      {"cs", r.cs},
      {"ss", r.ss},
      {"ds", r.ds},
      {"es", r.es},
      {"fs", r.fs},
      {"gs", r.gs},
      {"fs_base", r.fs_base},
      {"gs_base", r.gs_base},
  };
  for (const auto& [name, value] : regs) out.registers.push_back(RegisterValue{name, value});
}

/// The i386 register set a compat (32-bit) thread reports through NT_PRSTATUS.
struct I386Regs {
  std::uint32_t ebx, ecx, edx, esi, edi, ebp, eax, xds, xes, xfs, xgs, orig_eax, eip, xcs, eflags,
      esp, xss;
};

void addRegisters(const I386Regs& r, ThreadCapture& out) {
  const std::pair<const char*, std::uint32_t> regs[] = {
      {"eip", r.eip}, {"esp", r.esp},       {"ebp", r.ebp},           {"eax", r.eax},
      {"ebx", r.ebx}, {"ecx", r.ecx},       {"edx", r.edx},           {"esi", r.esi},
      {"edi", r.edi}, {"eflags", r.eflags}, {"orig_eax", r.orig_eax},
  };
  for (const auto& [name, value] : regs) out.registers.push_back(RegisterValue{name, value});
}

}  // namespace

std::vector<ThreadCapture> PtraceInspector::capture(std::span<const ThreadRef> threads) {
  std::vector<ThreadCapture> out;
  out.reserve(threads.size());
  for (const auto& t : threads) out.push_back(captureOne(t));
  // Unwinding reads the target's debug information: with libc's separate debug file alone its
  // heap peaks at 16 MB, freed at the end of each unwinding but kept by the allocator in the
  // arena of whichever worker ran it. Without giving it back, the service's resident memory
  // grew by some 26 MB for each worker that ever captured, and stayed there (3-4 ms a capture).
  ::malloc_trim(0);
  return out;
}

ThreadCapture PtraceInspector::captureOne(ThreadRef thread) {
  ThreadCapture out;
  out.thread = thread;
  out.tracer_pid = tracerOf(thread);
  if (out.tracer_pid != 0) {
    out.error = "already traced by process " + std::to_string(out.tracer_pid);
    return out;
  }

  const auto sc = syscallOf(thread);
  if (auto hazard = stopHazard(thread, sc); !hazard.empty()) {
    return captureWithoutStopping(thread, *sc, std::move(hazard));
  }

  // Everything the stop needs is done before it: while the thread is held, only the register
  // read runs. A thread blocked in a system call shows its stack pointer in its syscall file,
  // and its stack cannot change while it stays blocked, so the stack is copied before the stop;
  // the stop's registers then tell whether it is still where the copy was taken (same stack
  // pointer), and only if not is it copied again while held. Unwinding comes after the release.
  StackCopy copy;
  copy.bytes.resize(kStackCopyBytes);
  const auto copyStack = [&](std::uint64_t sp) -> std::size_t {
    iovec local{copy.bytes.data(), copy.bytes.size()};
    iovec remote{reinterpret_cast<void*>(sp), copy.bytes.size()};
    const ssize_t n = ::process_vm_readv(thread.pid.value, &local, 1, &remote, 1, 0);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  };
  const bool blocked = sc && sc->kind == SyscallState::Kind::kInSyscall && sc->sp != 0;
  const std::uint64_t copied_at = blocked ? sc->sp : 0;
  std::size_t stack_bytes = blocked ? copyStack(copied_at) : 0;
  union {
    user_regs_struct native;
    I386Regs compat;
  } regs{};
  iovec regs_iov{&regs, sizeof(regs)};
  {
    PtraceStop stop(thread.tid.value);
    out.error = stop.stop();
    if (out.error.empty()) {
      if (::ptrace(PTRACE_GETREGSET, thread.tid.value, reinterpret_cast<void*>(NT_PRSTATUS),
                   &regs_iov) != 0) {
        out.error = std::string("PTRACE_GETREGSET: ") + std::strerror(errno);
      } else if (regs_iov.iov_len == sizeof(user_regs_struct) &&
                 (stack_bytes == 0 || regs.native.rsp != copied_at)) {
        stack_bytes = copyStack(regs.native.rsp);
      }
    }
    out.stop_time = stop.release();
  }
  const bool native = out.error.empty() && regs_iov.iov_len == sizeof(user_regs_struct);
  if (native) {
    out.architecture = "x86_64";
    addRegisters(regs.native, out);
    const auto& r = regs.native;
    const std::uint64_t dwarf[17] = {r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8,
                                     r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip};
    std::memcpy(copy.regs, dwarf, sizeof(dwarf));
    copy.sp = r.rsp;
    copy.bytes.resize(stack_bytes);
  } else if (out.error.empty()) {
    out.architecture = "i386";
    addRegisters(regs.compat, out);
  }
  if (!out.error.empty()) return out;
  out.captured = true;
  if (native) {
    auto unwound = unwindStack(thread.pid, thread.tid, copy, {.max_frames = kMaxFrames});
    out.frames = std::move(unwound.frames);
    if (out.frames.empty()) out.error = std::move(unwound.error);
    out.note = std::move(unwound.note);
  }
  return out;
}

ThreadCapture PtraceInspector::captureWithoutStopping(ThreadRef thread, const SyscallState& sc,
                                                      std::string hazard) {
  ThreadCapture out;
  out.thread = thread;
  out.method = CaptureMethod::kNotStopped;
  out.architecture = "x86_64";
  // What the kernel shows of a thread blocked in a system call: its stack and instruction
  // pointers and the call's arguments, which on x86-64 are still in the registers that passed
  // them (the kernel restores all but rax, rcx and r11 on return; rcx holds the return address).
  StackCopy copy;
  copy.known = 0;
  const auto set = [&](DwarfRegister r, std::uint64_t value) {
    copy.regs[r] = value;
    copy.known |= 1U << r;
  };
  set(kDwarfRip, sc.pc);
  set(kDwarfRsp, sc.sp);
  set(kDwarfRcx, sc.pc);
  set(kDwarfRdi, sc.args[0]);
  set(kDwarfRsi, sc.args[1]);
  set(kDwarfRdx, sc.args[2]);
  set(kDwarfR10, sc.args[3]);
  set(kDwarfR8, sc.args[4]);
  set(kDwarfR9, sc.args[5]);
  const std::pair<const char*, std::uint64_t> regs[] = {
      {"rip", sc.pc},      {"rsp", sc.sp},      {"orig_rax", static_cast<std::uint64_t>(sc.number)},
      {"rdi", sc.args[0]}, {"rsi", sc.args[1]}, {"rdx", sc.args[2]},
      {"r10", sc.args[3]}, {"r8", sc.args[4]},  {"r9", sc.args[5]},
      {"rcx", sc.pc},
  };
  for (const auto& [name, value] : regs) out.registers.push_back(RegisterValue{name, value});

  copy.sp = sc.sp;
  copy.bytes.resize(kStackCopyBytes);
  iovec local{copy.bytes.data(), copy.bytes.size()};
  iovec remote{reinterpret_cast<void*>(sc.sp), copy.bytes.size()};
  const ssize_t n = ::process_vm_readv(thread.pid.value, &local, 1, &remote, 1, 0);
  copy.bytes.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  out.captured = true;
  auto unwound =
      unwindStack(thread.pid, thread.tid, copy, {.max_frames = kMaxFrames, .scan = true});
  out.frames = std::move(unwound.frames);
  if (out.frames.empty()) out.error = std::move(unwound.error);
  const auto scanned = std::find_if(out.frames.begin(), out.frames.end(),
                                    [](const StackFrame& f) { return f.scanned; });
  out.note = "not stopped: " + hazard +
             "; registers are those a blocked system call shows (rip, rsp, rcx and the call's "
             "arguments), the stack was read from memory";
  if (scanned != out.frames.end()) {
    out.note += "; frames from #" + std::to_string(scanned - out.frames.begin()) +
                " on were found by scanning the stack";
  }
  if (!unwound.note.empty()) out.note += "; " + unwound.note;
  return out;
}

}  // namespace wctmon::linux_platform
