#include "platform/windows/windows_thread_inspector.h"

#include <windows.h>
// dbghelp.h, psapi.h and winternl.h need windows.h first.
#include <cxxabi.h>
#include <dbghelp.h>
#include <psapi.h>
#include <winternl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "platform/windows/handle.h"
#include "platform/windows/ntdll.h"
#include "platform/windows/suspension_record.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

using Clock = std::chrono::steady_clock;

constexpr DWORD kThreadAccess =
    THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_INFORMATION;
constexpr DWORD kSuspendFailed = static_cast<DWORD>(-1);
constexpr std::uint64_t kPageSize = 4096;
constexpr ULONG kMaxSymbolName = 1024;
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

/// The process of the threads asked for, opened once per capture call.
struct Target {
  Pid pid;
  Handle process;
  bool wow64 = false;
  /// The process has exited: its threads are gone.
  bool gone = false;
  /// Why none of its threads can be captured; empty when they can.
  std::string error;
  /// Why their stacks cannot be read (no PROCESS_VM_READ); empty when they can.
  std::string stack_error;
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

Target openTarget(Pid pid) {
  Target target;
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

/// A thread's registers and the top of its stack, as they were while it was suspended.
struct Held {
  ThreadCapture capture;
  Handle thread;
  CONTEXT context{};
  WOW64_CONTEXT wow64_context{};
  std::uint64_t sp = 0;
  std::vector<std::byte> stack;
};

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

/// Suspends `ref`, takes its registers and the top of its stack, and resumes it.
Held hold(const Target& target, ThreadRef ref) {
  Held held;
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

// StackWalk64 reads memory through a callback that takes no context of ours: the copy of the
// stack being walked is reached through this, set around each walk (under dbgHelpMutex()).
struct StackView {
  std::uint64_t base = 0;
  std::span<const std::byte> bytes;
};
thread_local const StackView* t_stack = nullptr;

/// Points readMemory at one copy for the time of one walk.
class StackViewScope {
 public:
  explicit StackViewScope(const StackView& view) { t_stack = &view; }
  StackViewScope(const StackViewScope&) = delete;
  StackViewScope& operator=(const StackViewScope&) = delete;
  ~StackViewScope() { t_stack = nullptr; }
};

/// The stack from its copy, everything else (code, unwind tables) from the live process:
/// the walk runs after the thread was resumed, when its live stack may have moved on, while
/// code and unwind data do not change as long as their module stays loaded.
BOOL CALLBACK readMemory(HANDLE process, DWORD64 address, PVOID buffer, DWORD size, LPDWORD read) {
  if (t_stack != nullptr && address >= t_stack->base &&
      address - t_stack->base + size <= t_stack->bytes.size()) {
    std::memcpy(buffer, t_stack->bytes.data() + (address - t_stack->base), size);
    *read = size;
    return TRUE;
  }
  SIZE_T n = 0;
  const BOOL ok = ::ReadProcessMemory(process, remote(address), buffer, size, &n);
  *read = static_cast<DWORD>(n);
  return ok;
}

/// GCC's C++ names (mingw's DWARF and COFF symbols are Itanium-mangled; SYMOPT_UNDNAME only
/// knows Microsoft's decoration) in readable form; other names as they are.
std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

/// The named exports of one module, read from the target's memory, by address.
class ExportTable {
 public:
  /// Reads the export directory of the module loaded at `base`; empty when it has none or it
  /// cannot be read.
  static ExportTable read(HANDLE process, std::uint64_t base) {
    ExportTable table;
    const auto readAt = [&](std::uint64_t rva, void* into, std::size_t size) {
      SIZE_T n = 0;
      return ::ReadProcessMemory(process, remote(base + rva), into, size, &n) != FALSE && n == size;
    };
    IMAGE_DOS_HEADER dos{};
    if (!readAt(0, &dos, sizeof(dos)) || dos.e_magic != IMAGE_DOS_SIGNATURE) return table;
    IMAGE_NT_HEADERS64 nt{};  // the larger of the two forms; the headers' page holds either
    if (!readAt(static_cast<std::uint64_t>(dos.e_lfanew), &nt, sizeof(nt)) ||
        nt.Signature != IMAGE_NT_SIGNATURE) {
      return table;
    }
    IMAGE_DATA_DIRECTORY directory{};
    if (nt.OptionalHeader.Magic == IMAGE_NT_OPTIONAL_HDR64_MAGIC) {
      directory = nt.OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
    } else if (nt.OptionalHeader.Magic == IMAGE_NT_OPTIONAL_HDR32_MAGIC) {
      IMAGE_NT_HEADERS32 nt32{};
      std::memcpy(&nt32, &nt, sizeof(nt32));
      directory = nt32.OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
    }
    if (directory.VirtualAddress == 0 || directory.Size < sizeof(IMAGE_EXPORT_DIRECTORY) ||
        directory.Size > kMaxExportBytes) {
      return table;
    }
    // The directory, its three arrays and the names all lie in the export data (.edata): one
    // read. Anything pointing outside it is skipped rather than read piecemeal.
    std::vector<std::byte> data(directory.Size);
    if (!readAt(directory.VirtualAddress, data.data(), data.size())) return table;
    IMAGE_EXPORT_DIRECTORY exports{};
    std::memcpy(&exports, data.data(), sizeof(exports));
    const auto inside = [&](DWORD rva, std::uint64_t bytes) {
      return rva >= directory.VirtualAddress &&
             rva - directory.VirtualAddress + bytes <= directory.Size;
    };
    const auto at = [&](DWORD rva) { return data.data() + (rva - directory.VirtualAddress); };
    if (!inside(exports.AddressOfFunctions, exports.NumberOfFunctions * 4ULL) ||
        !inside(exports.AddressOfNames, exports.NumberOfNames * 4ULL) ||
        !inside(exports.AddressOfNameOrdinals, exports.NumberOfNames * 2ULL)) {
      return table;
    }
    for (DWORD i = 0; i < exports.NumberOfNames; ++i) {
      DWORD name_rva = 0;
      WORD ordinal = 0;
      std::memcpy(&name_rva, at(exports.AddressOfNames) + i * 4ULL, sizeof(name_rva));
      std::memcpy(&ordinal, at(exports.AddressOfNameOrdinals) + i * 2ULL, sizeof(ordinal));
      if (ordinal >= exports.NumberOfFunctions || !inside(name_rva, 1)) continue;
      DWORD function_rva = 0;
      std::memcpy(&function_rva, at(exports.AddressOfFunctions) + ordinal * 4ULL,
                  sizeof(function_rva));
      // An address inside the export data is a forwarder ("NTDLL.RtlFoo"), not code.
      if (function_rva == 0 || inside(function_rva, 0)) continue;
      const auto* name = reinterpret_cast<const char*>(at(name_rva));
      const std::size_t room = directory.Size - (name_rva - directory.VirtualAddress);
      table.entries_.emplace_back(base + function_rva, std::string(name, ::strnlen(name, room)));
    }
    std::sort(table.entries_.begin(), table.entries_.end());
    return table;
  }

  /// The export that starts at most kNearBytes before `address`, or nullptr.
  [[nodiscard]] const std::pair<std::uint64_t, std::string>* covering(std::uint64_t address) const {
    auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                               [](std::uint64_t a, const std::pair<std::uint64_t, std::string>& e) {
                                 return a < e.first;
                               });
    if (it == entries_.begin()) return nullptr;
    --it;
    // Aliases share an address (NtWaitForSingleObject and ZwWaitForSingleObject): the first
    // name in order is taken, so that a frame is always named the same.
    while (it != entries_.begin() && std::prev(it)->first == it->first) --it;
    return address - it->first <= kNearBytes ? &*it : nullptr;
  }

 private:
  static constexpr std::size_t kMaxExportBytes = 16 * 1024 * 1024;
  /// How far past an export's start an address may be and still be named by it: only small
  /// stubs, such as system-call thunks, are named this way.
  static constexpr std::uint64_t kNearBytes = 64;

  std::vector<std::pair<std::uint64_t, std::string>> entries_;
};

/// Names the addresses of one process through DbgHelp, with the process's export tables as a
/// last resort. Wine's DbgHelp gives an export it has no other information for a size of one
/// byte, so an address inside a small stub without unwind data (ntdll's system-call thunks, where
/// every blocked thread stands) has no name there; a nearby export is the name Windows's DbgHelp
/// would give without symbols.
class Symbolizer {
 public:
  explicit Symbolizer(HANDLE process) : process_(process) {}

  /// A frame at `pc`, with its module and function. A return address (every frame but the
  /// innermost) points after the call: the call itself is looked up.
  StackFrame frameAt(DWORD64 pc, bool activation) {
    StackFrame frame;
    frame.pc = pc;
    const DWORD64 lookup = activation ? pc : pc - 1;
    const DWORD64 base = ::SymGetModuleBase64(process_, lookup);
    frame.module = moduleName(lookup, base);
    // SYMBOL_INFOW ends in a one-character name; the name's room follows it.
    std::vector<std::uint64_t> storage(
        (sizeof(SYMBOL_INFOW) + kMaxSymbolName * sizeof(wchar_t)) / sizeof(std::uint64_t) + 1);
    auto* symbol = reinterpret_cast<SYMBOL_INFOW*>(storage.data());
    symbol->SizeOfStruct = sizeof(SYMBOL_INFOW);
    symbol->MaxNameLen = kMaxSymbolName;
    DWORD64 displacement = 0;
    if (::SymFromAddrW(process_, lookup, &displacement, symbol) != FALSE) {
      const ULONG length = std::min(symbol->NameLen, kMaxSymbolName - 1);
      frame.function = demangle(toUtf8(std::wstring_view(symbol->Name, length)));
      frame.offset = pc - symbol->Address;
      IMAGEHLP_LINEW64 line{};
      line.SizeOfStruct = sizeof(line);
      DWORD line_displacement = 0;
      if (::SymGetLineFromAddrW64(process_, lookup, &line_displacement, &line) != FALSE &&
          line.FileName != nullptr) {
        frame.file = toUtf8(line.FileName);
        frame.line = line.LineNumber;
      }
    } else if (base != 0) {
      auto table = exports_.find(base);
      if (table == exports_.end()) {
        table = exports_.emplace(base, ExportTable::read(process_, base)).first;
      }
      if (const auto* entry = table->second.covering(lookup)) {
        frame.function = entry->second;
        frame.offset = pc - entry->first;
      }
    }
    return frame;
  }

 private:
  std::string moduleName(DWORD64 address, DWORD64 base) {
    IMAGEHLP_MODULEW64 module{};
    module.SizeOfStruct = sizeof(module);
    if (::SymGetModuleInfoW64(process_, address, &module) != FALSE &&
        module.ImageName[0] != L'\0') {
      return toUtf8(baseName(module.ImageName));
    }
    if (base == 0) return {};
    std::wstring path(MAX_PATH * 4, L'\0');
    const DWORD n = ::GetModuleFileNameExW(
        process_, reinterpret_cast<HMODULE>(static_cast<std::uintptr_t>(base)), path.data(),
        static_cast<DWORD>(path.size()));
    path.resize(n);
    return toUtf8(baseName(path));
  }

  HANDLE process_;
  std::map<DWORD64, ExportTable> exports_;
};

/// Walks the stack of one held thread from its saved context and copied stack.
std::vector<StackFrame> walk(HANDLE process, bool wow64, Held& held, Symbolizer& symbolizer,
                             std::string& error) {
  std::vector<StackFrame> frames;
  STACKFRAME64 frame{};
  frame.AddrPC.Mode = AddrModeFlat;
  frame.AddrFrame.Mode = AddrModeFlat;
  frame.AddrStack.Mode = AddrModeFlat;
  DWORD machine = 0;
  // StackWalk64 updates the context as it unwinds: it works on copies.
  CONTEXT context = held.context;
  WOW64_CONTEXT wow64_context = held.wow64_context;
  void* context_record = nullptr;
  if (wow64) {
    machine = IMAGE_FILE_MACHINE_I386;
    frame.AddrPC.Offset = wow64_context.Eip;
    frame.AddrFrame.Offset = wow64_context.Ebp;
    frame.AddrStack.Offset = wow64_context.Esp;
    // WOW64_CONTEXT is the x86 CONTEXT, which is what StackWalk64 takes for
    // IMAGE_FILE_MACHINE_I386.
    context_record = &wow64_context;
  } else {
    machine = IMAGE_FILE_MACHINE_AMD64;
    frame.AddrPC.Offset = context.Rip;
    frame.AddrFrame.Offset = context.Rsp;
    frame.AddrStack.Offset = context.Rsp;
    context_record = &context;
  }
  const StackView view{held.sp, held.stack};
  const StackViewScope scope(view);
  DWORD64 last_sp = 0;
  while (frames.size() < WindowsThreadInspector::kMaxFrames) {
    if (::StackWalk64(machine, process, held.thread.get(), &frame, context_record, readMemory,
                      ::SymFunctionTableAccess64, ::SymGetModuleBase64, nullptr) == FALSE) {
      if (frames.empty()) error = "StackWalk64 found no frame: " + lastErrorText(::GetLastError());
      break;
    }
    const DWORD64 pc = frame.AddrPC.Offset;
    if (pc == 0) break;
    // Each caller's frame lies above its callee's; a walk that does not climb is lost.
    if (!frames.empty() && frame.AddrStack.Offset <= last_sp) break;
    last_sp = frame.AddrStack.Offset;
    frames.push_back(symbolizer.frameAt(pc, frames.empty()));
  }
  return frames;
}

/// Walks the stacks of the threads of `target` that were held, loading its symbols once.
void walkAll(const Target& target, std::span<Held*> held) {
  const auto captured = [](const Held* h) { return h->capture.captured; };
  if (std::none_of(held.begin(), held.end(), captured)) return;
  if (!target.stack_error.empty()) {
    for (Held* h : held) {
      if (h->capture.captured) h->capture.error = target.stack_error;
    }
    return;
  }
  std::lock_guard lock(dbgHelpMutex());
  // Line numbers are loaded: frames carry their source position. Deferred loads read a
  // module's symbols only when a frame falls in it. No prompts or error boxes: this is a
  // service.
  ::SymSetOptions(SYMOPT_UNDNAME | SYMOPT_DEFERRED_LOADS | SYMOPT_LOAD_LINES | SYMOPT_NO_PROMPTS |
                  SYMOPT_FAIL_CRITICAL_ERRORS);
  HANDLE process = target.process.get();
  if (::SymInitializeW(process, nullptr, TRUE) == FALSE) {
    const std::string error = "no stack: SymInitialize: " + lastErrorText(::GetLastError());
    for (Held* h : held) {
      if (h->capture.captured) h->capture.error = error;
    }
    return;
  }
  const std::unique_ptr<void, decltype(&::SymCleanup)> symbols(process, &::SymCleanup);
  Symbolizer symbolizer(process);
  for (Held* h : held) {
    if (!h->capture.captured) continue;
    std::string error;
    h->capture.frames = walk(process, target.wow64, *h, symbolizer, error);
    if (h->capture.frames.empty()) h->capture.error = error;
  }
}

}  // namespace

std::mutex& dbgHelpMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<ThreadCapture> WindowsThreadInspector::capture(std::span<const ThreadRef> threads) {
  installSuspensionGuards();
  std::vector<ThreadCapture> out(threads.size());
  // Threads grouped by process, in the order they come: each process is opened, and its
  // symbols loaded, once per call.
  std::vector<Pid> pids;
  for (const auto& t : threads) {
    if (std::find(pids.begin(), pids.end(), t.pid) == pids.end()) pids.push_back(t.pid);
  }
  for (const Pid pid : pids) {
    const Target target = openTarget(pid);
    std::vector<std::size_t> slots;
    std::vector<Held> held;
    for (std::size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].pid != pid) continue;
      slots.push_back(i);
      held.push_back(hold(target, threads[i]));
    }
    std::vector<Held*> pointers;
    for (auto& h : held) pointers.push_back(&h);
    walkAll(target, pointers);
    for (std::size_t k = 0; k < held.size(); ++k) out[slots[k]] = std::move(held[k].capture);
  }
  return out;
}

}  // namespace wctmon::windows_platform
