#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "core/ports/process_catalog.h"

namespace wctmon::windows_platform {

/// Processes from one Toolhelp32 snapshot, each opened with PROCESS_QUERY_LIMITED_INFORMATION
/// (and PROCESS_VM_READ when command lines are asked for and allowed) for what the snapshot
/// lacks:
/// - identity.start_time is the creation time (GetProcessTimes) as a FILETIME: 100 ns ticks
///   since 1601-01-01 UTC (on Linux it is the start time in clock ticks since boot; either way
///   only equality across two reads matters). It is 0 for a process that cannot be opened.
/// - comm is the image file name Toolhelp reports ("app.exe"), whole: Windows has no 15-character
///   name the way the Linux kernel's comm has.
/// - exe_name is the base name of QueryFullProcessImageNameW, empty when it cannot be read.
/// - cmdline is the command line as one string (Windows keeps no argument vector), from
///   NtQueryInformationProcess(ProcessCommandLineInformation), else from the process's PEB
///   (Wine and Windows before 8.1 refuse the query); empty when neither can be read.
/// A process that cannot be opened (a protected process, another user's without
/// SeDebugPrivilege) is still listed, with the name and pid Toolhelp gives. The System Idle
/// Process (pid 0) and System (pid 4) are left out: neither has user-space threads. The image
/// and command line of a process are read once per identity: Windows has no exec, so a process
/// keeps both for its whole life.
class WindowsProcessCatalog final : public ProcessCatalog {
 public:
  [[nodiscard]] std::vector<ProcessInfo> list(bool with_cmdline) override;
  [[nodiscard]] std::optional<ProcessInfo> get(Pid pid, bool with_cmdline) override;

 private:
  std::mutex mutex_;
  std::unordered_map<std::int32_t, ProcessInfo> known_;
};

}  // namespace wctmon::windows_platform
