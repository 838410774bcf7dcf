#pragma once

#include <windows.h>

#include <cstdint>
#include <string>

#include "model/ids.h"
#include "model/result.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform {

/// The creation time of process `pid` (FILETIME, 100 ns units since 1601): kNoSuchProcess when
/// it is gone, kAccessDenied when it cannot be queried.
[[nodiscard]] Result<std::uint64_t> processStartTime(Pid pid);

/// Process `pid` with its name, creation time and threads, from one Toolhelp32 snapshot, and
/// each thread's name.
[[nodiscard]] Result<ProcessThreads> listProcessThreads(Pid pid);

/// The name a thread was given (SetThreadDescription: Windows 10 1607 and later, and Wine);
/// empty when it has none or cannot be read.
[[nodiscard]] std::string threadDescription(DWORD tid);

}  // namespace wctmon::windows_platform
