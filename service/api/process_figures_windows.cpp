#include <windows.h>
// After windows.h, which psapi.h needs.
#include <psapi.h>

#include <cstdint>
#include <string>

#include "api/process_figures.h"

namespace wctmon::api {

namespace {

std::uint64_t ticksOf(const FILETIME& t) {
  return (std::uint64_t{t.dwHighDateTime} << 32) | t.dwLowDateTime;
}

}  // namespace

Result<ProcessFigures> readProcessFigures() {
  // A pseudo-handle: nothing to close.
  const HANDLE self = ::GetCurrentProcess();
  FILETIME created{};
  FILETIME exited{};
  FILETIME kernel{};
  FILETIME user{};
  if (::GetProcessTimes(self, &created, &exited, &kernel, &user) == 0) {
    return Error{ErrorCode::kIo,
                 "GetProcessTimes failed: error " + std::to_string(::GetLastError())};
  }
  PROCESS_MEMORY_COUNTERS_EX memory{};
  memory.cb = sizeof(memory);
  if (::GetProcessMemoryInfo(self, reinterpret_cast<PROCESS_MEMORY_COUNTERS*>(&memory),
                             sizeof(memory)) == 0) {
    return Error{ErrorCode::kIo,
                 "GetProcessMemoryInfo failed: error " + std::to_string(::GetLastError())};
  }
  // FILETIMEs count 100 ns; a point in time counts them from 1601-01-01.
  constexpr double kTicksPerSecond = 1e7;
  constexpr std::uint64_t kUnixEpoch = 116444736000000000ULL;

  ProcessFigures f;
  f.cpu_seconds = static_cast<double>(ticksOf(kernel) + ticksOf(user)) / kTicksPerSecond;
  f.resident_bytes = memory.WorkingSetSize;
  // The commit charge: what the Go client reports as PrivateUsage, the same figure on Windows
  // (PagefileUsage is documented as the commit charge), and the one of the two Wine fills in.
  f.virtual_bytes = memory.PagefileUsage;
  f.start_time_seconds = static_cast<double>(ticksOf(created) - kUnixEpoch) / kTicksPerSecond;
  // A process holds a handle at least (its image's section); none is Wine's stub, not a count.
  DWORD handles = 0;
  if (::GetProcessHandleCount(self, &handles) != 0 && handles > 0) f.open_fds = handles;
  // As Prometheus' Go client says: Windows limits the handles of every process alike, to 2^24.
  f.max_fds = std::uint64_t{16} * 1024 * 1024;
  return f;
}

}  // namespace wctmon::api
