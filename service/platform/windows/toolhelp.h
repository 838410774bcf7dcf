#pragma once

#include <windows.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "model/ids.h"
#include "model/result.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform {

/// A FILETIME as one number: 100 ns units since 1601.
[[nodiscard]] std::uint64_t ticksOf(const FILETIME& time);

/// FILETIME ticks as a wall-clock time; nothing for 0 (not known).
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> wallClockOf(std::uint64_t ticks);

/// The creation time of an open process (FILETIME ticks); nullopt when GetProcessTimes fails
/// (GetLastError says why).
[[nodiscard]] std::optional<std::uint64_t> creationTicks(HANDLE process);

/// The creation time of process `pid` (FILETIME ticks): kNoSuchProcess when it is gone,
/// kAccessDenied when it cannot be queried.
[[nodiscard]] Result<std::uint64_t> processStartTime(Pid pid);

/// Process `pid` with its name, creation time and threads, from one Toolhelp32 snapshot, and
/// each thread's name and CPU time (one OpenThread per thread reads both).
[[nodiscard]] Result<ProcessThreads> listProcessThreads(Pid pid);

/// The time an open thread has run so far, in kernel and user mode (GetThreadTimes); nullopt when
/// it cannot be read. Under Wine the times of another process's thread come from its Linux
/// thread's /proc/PID/task/TID/stat, so they grow there as they do on Windows.
[[nodiscard]] std::optional<std::chrono::nanoseconds> threadCpuTime(HANDLE thread);

/// The same for thread `tid`, opened for the read (THREAD_QUERY_LIMITED_INFORMATION); nullopt when
/// it cannot be opened (gone, or not ours to query).
[[nodiscard]] std::optional<std::chrono::nanoseconds> threadCpuTime(DWORD tid);

/// The name a thread was given (SetThreadDescription: Windows 10 1607 and later, and Wine);
/// empty when it has none or cannot be read.
[[nodiscard]] std::string threadDescription(DWORD tid);

}  // namespace wctmon::windows_platform
