#include "platform/windows/dbghelp_stack_walker.h"

#include <windows.h>
// dbghelp.h needs windows.h first.
#include <dbghelp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "platform/windows/dbghelp_symbolizer.h"
#include "platform/windows/win_text.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon::windows_platform {
namespace {

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
  HANDLE process = target.process.get();
  const SymbolSession symbols(process);
  if (!symbols.ok()) {
    const std::string error = "no stack: SymInitialize: " + symbols.error();
    for (HeldThread* h : held) {
      if (h->capture.captured) h->capture.error = error;
    }
    return;
  }
  Symbolizer symbolizer(process);
  for (HeldThread* h : held) {
    if (!h->capture.captured) continue;
    std::string error;
    h->capture.frames = walk(process, target.wow64, *h, symbolizer, error);
    if (h->capture.frames.empty()) h->capture.error = error;
  }
}

}  // namespace wctmon::windows_platform
