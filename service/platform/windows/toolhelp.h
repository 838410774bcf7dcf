#pragma once

#include <cstdint>

#include "model/ids.h"
#include "model/result.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform {

/// The creation time of process `pid` (FILETIME, 100 ns units since 1601): kNoSuchProcess when
/// it is gone, kAccessDenied when it cannot be queried.
[[nodiscard]] Result<std::uint64_t> processStartTime(Pid pid);

/// Process `pid` with its name, creation time and threads, from one Toolhelp32 snapshot.
[[nodiscard]] Result<ProcessThreads> listProcessThreads(Pid pid);

}  // namespace wctmon::windows_platform
