#pragma once

// Windows keeps a thread suspended by a process that dies suspended for ever: the kernel undoes
// nothing. Every thread this process holds suspended is therefore recorded here while it is, and
// a last-chance handler resumes whatever is recorded when the process is about to die of an
// unhandled exception, an abort, a console close or Ctrl+C, or an exit with work still running.
// What no handler runs for cannot be covered: TerminateProcess (a kill from outside, Task
// Manager's End task) and a crash of the handler itself.

#include <windows.h>

#include <cstddef>

namespace wctmon::windows_platform {

/// One recorded suspension: suspends on `hold`, resumes on `release` or destruction, unless a
/// last-chance handler resumed the thread first (then release does nothing). The handle must
/// stay open while the suspension lasts.
class RecordedSuspension {
 public:
  RecordedSuspension() = default;
  RecordedSuspension(const RecordedSuspension&) = delete;
  RecordedSuspension& operator=(const RecordedSuspension&) = delete;
  ~RecordedSuspension() { release(); }

  /// Suspends `thread` (through Wow64SuspendThread when `wow64` and the system has it, else
  /// SuspendThread): the count it had, or (DWORD)-1 with GetLastError() set.
  DWORD hold(HANDLE thread, bool wow64);
  /// Resumes the thread if it is still this suspension's to resume.
  void release();

 private:
  HANDLE thread_ = nullptr;
  int slot_ = -1;
};

/// Installs the last-chance handlers (once per process): an unhandled-exception filter chained
/// to the one before it, a console control handler and a SIGABRT handler. The end of the process
/// (ExitProcess, after every other thread is ended) is covered without installing anything.
void installSuspensionGuards();

/// How many threads this process holds suspended now.
[[nodiscard]] std::size_t suspendedThreads();

/// Resumes every recorded thread and forgets it: what the last-chance handlers run. Lock-free,
/// so that it is safe on a thread that died anywhere. Returns how many it resumed.
std::size_t resumeSuspendedThreads();

}  // namespace wctmon::windows_platform
