#include "platform/windows/thread_context_capture.h"

#include <windows.h>
// winternl.h needs windows.h first.
#include <winternl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "platform/windows/ntdll.h"
#include "platform/windows/suspension_record.h"
#include "platform/windows/win_text.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon::windows_platform {
namespace {

using Clock = std::chrono::steady_clock;

constexpr DWORD kThreadAccess =
    THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_INFORMATION;
constexpr DWORD kSuspendFailed = static_cast<DWORD>(-1);
constexpr std::uint64_t kPageSize = 4096;
/// THREADINFOCLASS value of THREAD_BASIC_INFORMATION.
constexpr ULONG kThreadBasicInformation = 0;

const void* remote(std::uint64_t address) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
}

/// A thread held suspended. It is resumed when this goes out of scope, on every path, and the
/// time from the suspension to the resumption is kept: the cost the target paid. While it lasts
/// it is recorded, so that a death of this process resumes it (suspension_record.h).
class Suspension {
 public:
  Suspension(HANDLE thread, bool wow64) : thread_(thread), wow64_(wow64) {}
  Suspension(const Suspension&) = delete;
  Suspension& operator=(const Suspension&) = delete;
  ~Suspension() { release(); }

  /// Suspends the thread; returns an error text, empty on success.
  std::string suspend() {
    started_ = Clock::now();
    // A 32-bit thread is suspended through WOW64 so that its 32-bit context is saved
    // consistently; ResumeThread serves both.
    previous_ = held_thread_.hold(thread_, wow64_);
    if (previous_ == kSuspendFailed) return "SuspendThread: " + lastErrorText(::GetLastError());
    suspended_ = true;
    return {};
  }

  /// Resumes the thread; returns how long it was held.
  std::chrono::nanoseconds release() {
    if (suspended_) {
      held_thread_.release();
      suspended_ = false;
      held_ = Clock::now() - started_;
    }
    return held_;
  }

  /// The suspend count the thread had before: above 0, someone else holds it suspended too.
  [[nodiscard]] DWORD previousCount() const { return previous_; }

 private:
  HANDLE thread_;
  bool wow64_;
  RecordedSuspension held_thread_;
  bool suspended_ = false;
  DWORD previous_ = 0;
  Clock::time_point started_;
  std::chrono::nanoseconds held_{0};
};

/// THREAD_BASIC_INFORMATION, which mingw-w64's winternl.h does not declare.
struct ThreadBasicInformation {
  LONG exit_status;
  PVOID teb;
  CLIENT_ID client_id;
  ULONG_PTR affinity_mask;
  LONG priority;
  LONG base_priority;
};

using NtQueryInformationThreadFn = LONG(NTAPI*)(HANDLE, ULONG, PVOID, ULONG, PULONG);

NtQueryInformationThreadFn ntQueryInformationThread() {
  static const auto fn = ntdllFunction<NtQueryInformationThreadFn>("NtQueryInformationThread");
  return fn;
}

/// Where the stack of a 64-bit thread ends: StackBase, its highest address, from the NT_TIB at
/// the start of its TEB; 0 when unknown. Read before the thread is suspended: the bounds of a
/// stack do not move.
std::uint64_t stackBase(HANDLE process, HANDLE thread) {
  const auto query = ntQueryInformationThread();
  if (query == nullptr) return 0;
  ThreadBasicInformation basic{};
  if (query(thread, kThreadBasicInformation, &basic, sizeof(basic), nullptr) < 0 ||
      basic.teb == nullptr) {
    return 0;
  }
  NT_TIB tib{};
  SIZE_T read = 0;
  if (::ReadProcessMemory(process, basic.teb, &tib, sizeof(tib), &read) == FALSE ||
      read != sizeof(tib)) {
    return 0;
  }
  return reinterpret_cast<std::uintptr_t>(tib.StackBase);
}

void addRegisters(const CONTEXT& c, ThreadCapture& out) {
  const std::pair<const char*, std::uint64_t> regs[] = {
      {"rip", c.Rip},  {"rsp", c.Rsp},  {"rbp", c.Rbp},       {"rax", c.Rax},  {"rbx", c.Rbx},
      {"rcx", c.Rcx},  {"rdx", c.Rdx},  {"rsi", c.Rsi},       {"rdi", c.Rdi},  {"r8", c.R8},
      {"r9", c.R9},    {"r10", c.R10},  {"r11", c.R11},       {"r12", c.R12},  {"r13", c.R13},
      {"r14", c.R14},  {"r15", c.R15},  {"eflags", c.EFlags}, {"cs", c.SegCs}, {"ss", c.SegSs},
      {"ds", c.SegDs}, {"es", c.SegEs}, {"fs", c.SegFs},      {"gs", c.SegGs},
  };
  for (const auto& [name, value] : regs) out.registers.push_back(RegisterValue{name, value});
}

void addRegisters(const WOW64_CONTEXT& c, ThreadCapture& out) {
  const std::pair<const char*, std::uint32_t> regs[] = {
      {"eip", c.Eip},  {"esp", c.Esp},       {"ebp", c.Ebp},  {"eax", c.Eax},
      {"ebx", c.Ebx},  {"ecx", c.Ecx},       {"edx", c.Edx},  {"esi", c.Esi},
      {"edi", c.Edi},  {"eflags", c.EFlags}, {"cs", c.SegCs}, {"ss", c.SegSs},
      {"ds", c.SegDs}, {"es", c.SegEs},      {"fs", c.SegFs}, {"gs", c.SegGs},
  };
  for (const auto& [name, value] : regs) out.registers.push_back(RegisterValue{name, value});
}

/// Copies [sp, end) into `buffer` (at most its size); returns the bytes copied. Without a known
/// end (a 32-bit thread), or if the copy fails, the page that holds the stack pointer is copied
/// at least: a read of a range that runs off the stack's mapping fails as a whole.
std::size_t copyStack(HANDLE process, std::uint64_t sp, std::uint64_t end,
                      std::vector<std::byte>& buffer) {
  std::uint64_t size = buffer.size();
  if (end > sp) size = std::min(size, end - sp);
  SIZE_T read = 0;
  if (::ReadProcessMemory(process, remote(sp), buffer.data(), static_cast<SIZE_T>(size), &read) !=
          FALSE ||
      read > 0) {
    return read;
  }
  const std::uint64_t to_page_end = kPageSize - sp % kPageSize;
  if (to_page_end < size && ::ReadProcessMemory(process, remote(sp), buffer.data(),
                                                static_cast<SIZE_T>(to_page_end), &read) != FALSE) {
    return read;
  }
  return 0;
}

}  // namespace

CaptureTarget openTarget(Pid pid) {
  CaptureTarget target;
  target.pid = pid;
  const std::string name = "process " + std::to_string(pid.value);
  if (static_cast<DWORD>(pid.value) == ::GetCurrentProcessId()) {
    target.error = name +
                   " is this process: suspending one of its threads could hang the capture, "
                   "which may need a lock that thread holds";
    return target;
  }
  // DbgHelp needs PROCESS_QUERY_INFORMATION (module list) and PROCESS_VM_READ (stack, unwind
  // tables, symbols); without them the registers can still be taken.
  target.process.reset(::OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE,
                                     static_cast<DWORD>(pid.value)));
  if (!target.process.valid()) {
    const DWORD error = ::GetLastError();
    if (error == ERROR_INVALID_PARAMETER) {
      target.gone = true;
      target.error = name + " has exited";
      return target;
    }
    target.stack_error =
        "no stack: cannot read the memory of " + name + ": " + lastErrorText(error);
    target.process.reset(
        ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, static_cast<DWORD>(pid.value)));
    if (!target.process.valid()) {
      const DWORD limited_error = ::GetLastError();
      target.error = limited_error == ERROR_ACCESS_DENIED
                         ? "access denied opening " + name
                         : "cannot open " + name + ": " + lastErrorText(limited_error);
      return target;
    }
  }
  BOOL wow64 = FALSE;
  if (::IsWow64Process(target.process.get(), &wow64) == FALSE) {
    target.error = "cannot tell whether " + name +
                   " is 32-bit (IsWow64Process): " + lastErrorText(::GetLastError());
    return target;
  }
  target.wow64 = wow64 != FALSE;
  return target;
}

/// Suspends `ref`, takes its registers and the top of its stack, and resumes it.
HeldThread holdThread(const CaptureTarget& target, ThreadRef ref) {
  HeldThread held;
  ThreadCapture& out = held.capture;
  out.thread = ref;
  const std::string name = "thread " + std::to_string(ref.tid.value);
  if (!target.error.empty()) {
    out.error = name + (target.gone ? " is gone: " : ": ") + target.error;
    return held;
  }
  held.thread.reset(::OpenThread(kThreadAccess, FALSE, static_cast<DWORD>(ref.tid.value)));
  if (!held.thread.valid()) {
    const DWORD error = ::GetLastError();
    out.error =
        error == ERROR_INVALID_PARAMETER ? name + " is gone"
        : error == ERROR_ACCESS_DENIED
            ? "access denied opening " + name + " of process " + std::to_string(ref.pid.value)
            : "cannot open " + name + ": " + lastErrorText(error);
    return held;
  }
  // Thread ids are reused: the id may now name a thread of another process, ours included.
  const DWORD owner = ::GetProcessIdOfThread(held.thread.get());
  if (owner == 0) {
    out.error = "cannot tell the process of " + name + ": " + lastErrorText(::GetLastError());
    return held;
  }
  if (owner == ::GetCurrentProcessId()) {
    out.error = name + " is a thread of this process: suspending it could hang the capture";
    return held;
  }
  if (owner != static_cast<DWORD>(ref.pid.value)) {
    out.error = name + " is gone: the id now belongs to process " + std::to_string(owner);
    return held;
  }
  // An exited thread keeps its object while a handle is open, and OpenThread succeeds.
  DWORD exit_code = 0;
  if (::GetExitCodeThread(held.thread.get(), &exit_code) != FALSE && exit_code != STILL_ACTIVE) {
    out.error = name + " is gone (exited with code " + std::to_string(exit_code) + ")";
    return held;
  }

  // Everything that can be done before the suspension is: the stack's end is read from the TEB
  // and the copy's buffer is allocated, so that only the context and one memory read happen
  // while the thread is held.
  //
  // The stack is walked after the thread is resumed, from that copy, not while it is held:
  // StackWalk64 reads a frame at a time, and DbgHelp loads each module's unwind data and
  // symbols on first use, which takes milliseconds natively and hundreds of them under Wine:
  // too long to keep a thread stopped, and a time bound would leave half-walked stacks. Walking
  // the copy is as exact as walking the held thread for every frame the copy holds (64 KiB from
  // the stack pointer, up to the stack's base): the stack is read as it was at the suspension,
  // and only code and unwind tables, which do not change while their module stays loaded, come
  // from the live process. Frames deeper than the copy are read live and may be stale if the
  // thread has run on; a blocked thread, the one a capture is for, has not moved.
  // A 32-bit thread's stack bounds live in its 32-bit TEB, whose place is not assumed here: its
  // copy ends where a read that fails says.
  const bool read_stack = target.stack_error.empty();
  const std::uint64_t stack_end =
      read_stack && !target.wow64 ? stackBase(target.process.get(), held.thread.get()) : 0;
  if (read_stack) held.stack.resize(WindowsThreadInspector::kStackCopyBytes);
  std::size_t copied = 0;
  DWORD previous_count = 0;
  {
    Suspension suspension(held.thread.get(), target.wow64);
    out.error = suspension.suspend();
    if (out.error.empty()) {
      // SuspendThread only asks for the suspension; GetThreadContext waits until the thread is
      // really stopped, so its context is the one the thread stays in.
      BOOL got = FALSE;
      if (target.wow64) {
        held.wow64_context.ContextFlags = WOW64_CONTEXT_FULL;
        got = ::Wow64GetThreadContext(held.thread.get(), &held.wow64_context);
        held.sp = held.wow64_context.Esp;
      } else {
        held.context.ContextFlags = CONTEXT_FULL | CONTEXT_SEGMENTS;
        got = ::GetThreadContext(held.thread.get(), &held.context);
        held.sp = held.context.Rsp;
      }
      if (got == FALSE) {
        out.error = "GetThreadContext: " + lastErrorText(::GetLastError());
      } else if (read_stack) {
        copied = copyStack(target.process.get(), held.sp, stack_end, held.stack);
      }
    }
    out.stop_time = suspension.release();
    previous_count = suspension.previousCount();
  }
  held.stack.resize(copied);
  if (!out.error.empty()) return held;
  out.captured = true;
  out.architecture = target.wow64 ? "x86" : "x86_64";
  if (target.wow64) {
    addRegisters(held.wow64_context, out);
  } else {
    addRegisters(held.context, out);
  }
  if (previous_count > 0) {
    out.note = "the thread was already suspended (suspend count " + std::to_string(previous_count) +
               ") by someone else";
  }
  return held;
}

}  // namespace wctmon::windows_platform
