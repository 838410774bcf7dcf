#include "platform/windows/dbghelp_stack_walker.h"

#include <windows.h>
// dbghelp.h and psapi.h need windows.h first.
#include <cxxabi.h>
#include <dbghelp.h>
#include <psapi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "platform/windows/pe_export_table.h"
#include "platform/windows/win_text.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon::windows_platform {
namespace {

constexpr ULONG kMaxSymbolName = 1024;

const void* remote(std::uint64_t address) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
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
std::vector<StackFrame> walk(HANDLE process, bool wow64, HeldThread& held, Symbolizer& symbolizer,
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

}  // namespace

void walkStacks(const CaptureTarget& target, std::span<HeldThread*> held) {
  const auto captured = [](const HeldThread* h) { return h->capture.captured; };
  if (std::none_of(held.begin(), held.end(), captured)) return;
  if (!target.stack_error.empty()) {
    for (HeldThread* h : held) {
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
    for (HeldThread* h : held) {
      if (h->capture.captured) h->capture.error = error;
    }
    return;
  }
  const std::unique_ptr<void, decltype(&::SymCleanup)> symbols(process, &::SymCleanup);
  Symbolizer symbolizer(process);
  for (HeldThread* h : held) {
    if (!h->capture.captured) continue;
    std::string error;
    h->capture.frames = walk(process, target.wow64, *h, symbolizer, error);
    if (h->capture.frames.empty()) h->capture.error = error;
  }
}

}  // namespace wctmon::windows_platform
