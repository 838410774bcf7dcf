#pragma once

// The walk of a held thread's stack with DbgHelp (StackWalk64, SymFromAddrW), after the thread
// was resumed: the stack from the copy taken while it was held, code and unwind tables from the
// live process; frames named by DbgHelp's symbols or, failing them, by the module's exports.

#include <span>

#include "platform/windows/thread_context_capture.h"

namespace wctmon::windows_platform {

/// Walks the stacks of the threads of `target` that were held (their captures' frames, or their
/// errors), loading the process's symbols once, under dbgHelpMutex().
void walkStacks(const CaptureTarget& target, std::span<HeldThread*> held);

}  // namespace wctmon::windows_platform
