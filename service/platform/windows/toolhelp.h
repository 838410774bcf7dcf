#pragma once

#include <windows.h>

#include <cstdint>
#include <optional>
#include <string>

#include "model/ids.h"
#include "model/result.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform {

/// A FILETIME as one number: 100 ns units since 1601.
[[nodiscard]] std::uint64_t ticksOf(const FILETIME& time);

/// The creation time of an open process (FILETIME ticks); nullopt when GetProcessTimes fails
/// (GetLastError says why).
[[nodiscard]] std::optional<std::uint64_t> creationTicks(HANDLE process);

/// The creation time of process `pid` (FILETIME ticks): kNoSuchProcess when it is gone,
/// kAccessDenied when it cannot be queried.
[[nodiscard]] Result<std::uint64_t> processStartTime(Pid pid);

/// Process `pid` with its name, creation time and threads, from one Toolhelp32 snapshot, and
/// each thread's name.
[[nodiscard]] Result<ProcessThreads> listProcessThreads(Pid pid);

/// The name a thread was given (SetThreadDescription: Windows 10 1607 and later, and Wine);
/// empty when it has none or cannot be read.
[[nodiscard]] std::string threadDescription(DWORD tid);

}  // namespace wctmon::windows_platform
