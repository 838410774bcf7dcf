#include "platform/windows/suspension_record.h"

#include <array>
#include <atomic>
#include <csignal>
#include <mutex>

#include "platform/windows/ntdll.h"

namespace wctmon::windows_platform {
namespace {

using Wow64SuspendThreadFn = DWORD(WINAPI*)(HANDLE);

/// kernel32's Wow64SuspendThread, or nullptr where kernel32 does not export it. Looked up, not
/// linked: Wine (8) exports no Wow64SuspendThread, and there a linked call reaches the loader's
/// stub for a missing import, which ends the calling process. SuspendThread stops a 32-bit
/// thread as well; Wow64GetThreadContext then reads the 32-bit context the WOW64 layer keeps.
Wow64SuspendThreadFn wow64SuspendThread() {
  static const auto fn =
      systemFunction<Wow64SuspendThreadFn>(L"kernel32.dll", "Wow64SuspendThread");
  return fn;
}

/// One slot per suspension in progress: far more than the captures that run at once (one per
/// worker, one thread at a time each). A handler reads the slots while captures fill them, so
/// each is an atomic handle, taken and given back by compare-and-swap.
std::array<std::atomic<HANDLE>, 64> slots{};

/// Set by the last-chance handlers: from then on no thread is suspended, so that captures still
/// running on other threads cannot hold one again behind the handler's back.
std::atomic<bool> dying{false};
/// Suspensions between their check of `dying` and their record: the handler waits for them.
std::atomic<int> in_flight{0};
/// Whether this thread is in one of them: a handler run on it (an exception inside hold) does
/// not wait for itself.
thread_local bool holding = false;

/// What every last-chance handler does: no more suspensions, and every recorded one undone, the
/// ones under way included. Those are waited for up to 5 s: a suspension takes microseconds,
/// but a thread preempted in the middle of one on a loaded machine (or under Wine, whose
/// SuspendThread is a round trip to wineserver) can take far longer to finish it, and one
/// recorded after the last sweep would stay suspended for ever.
void resumeForGood() {
  dying = true;
  const int self = holding ? 1 : 0;
  for (int i = 0; i < 5000 && in_flight.load() > self; ++i) {
    resumeSuspendedThreads();
    ::Sleep(1);
  }
  resumeSuspendedThreads();
}

LPTOP_LEVEL_EXCEPTION_FILTER previous_filter = nullptr;

LONG WINAPI onUnhandledException(EXCEPTION_POINTERS* info) {
  resumeForGood();
  return previous_filter != nullptr ? previous_filter(info) : EXCEPTION_CONTINUE_SEARCH;
}

BOOL WINAPI onConsoleControl(DWORD /*event*/) {
  // Every event ends the process unless a later handler says otherwise: resume first, then let
  // the others (the service's own stop) decide.
  resumeForGood();
  return FALSE;
}

extern "C" void onAbort(int signal) {
  resumeForGood();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

/// Runs when the process ends by ExitProcess (a return from main, exit(), the service's stop),
/// after Windows has ended every other thread: whatever they held suspended, a capture still
/// running among them, is resumed then. A TLS callback of the executable is the one place that
/// runs at that point in a program without DLLs of its own.
void NTAPI onProcessEnd(PVOID /*module*/, DWORD reason, PVOID /*reserved*/) {
  if (reason == DLL_PROCESS_DETACH) resumeForGood();
}

}  // namespace

// The loader calls the callbacks of the .CRT$XL? sections (the C runtime's TLS directory).
#if defined(_MSC_VER)
#pragma section(".CRT$XLW", long, read)
#pragma comment(linker, "/INCLUDE:_tls_used")
#pragma comment(linker, "/INCLUDE:wctmon_process_end_callback")
extern "C" __declspec(allocate(".CRT$XLW")) const PIMAGE_TLS_CALLBACK wctmon_process_end_callback =
    onProcessEnd;
#else
extern "C" __attribute__((section(".CRT$XLW"), used))
const PIMAGE_TLS_CALLBACK wctmon_process_end_callback = onProcessEnd;
#endif

DWORD RecordedSuspension::hold(HANDLE thread, bool wow64) {
  release();
  ++in_flight;
  holding = true;
  if (dying) {
    holding = false;
    --in_flight;
    ::SetLastError(ERROR_PROCESS_ABORTED);
    return static_cast<DWORD>(-1);
  }
  const auto wow64_suspend = wow64 ? wow64SuspendThread() : nullptr;
  const DWORD previous = wow64_suspend != nullptr ? wow64_suspend(thread) : ::SuspendThread(thread);
  if (previous != static_cast<DWORD>(-1)) {
    thread_ = thread;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      HANDLE empty = nullptr;
      if (slots[i].compare_exchange_strong(empty, thread)) {
        slot_ = static_cast<int>(i);
        break;
      }
    }
  }
  holding = false;
  --in_flight;
  return previous;
}

void RecordedSuspension::release() {
  if (thread_ == nullptr) return;
  bool mine = true;
  if (slot_ >= 0) {
    // A handler that resumed the thread emptied the slot: then it is not ours to resume again.
    HANDLE expected = thread_;
    mine = slots[static_cast<std::size_t>(slot_)].compare_exchange_strong(expected, nullptr);
  }
  if (mine) ::ResumeThread(thread_);
  thread_ = nullptr;
  slot_ = -1;
}

void installSuspensionGuards() {
  static std::once_flag once;
  std::call_once(once, [] {
    previous_filter = ::SetUnhandledExceptionFilter(onUnhandledException);
    ::SetConsoleCtrlHandler(onConsoleControl, TRUE);
    std::signal(SIGABRT, onAbort);
  });
}

std::size_t suspendedThreads() {
  std::size_t n = 0;
  for (const auto& slot : slots) n += slot.load() != nullptr ? 1 : 0;
  return n;
}

std::size_t resumeSuspendedThreads() {
  std::size_t resumed = 0;
  for (auto& slot : slots) {
    if (HANDLE thread = slot.exchange(nullptr); thread != nullptr) {
      ::ResumeThread(thread);
      ++resumed;
    }
  }
  return resumed;
}

}  // namespace wctmon::windows_platform
