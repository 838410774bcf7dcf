#include "platform/windows/toolhelp.h"

#include <windows.h>
// tlhelp32.h needs windows.h first.
#include <tlhelp32.h>

#include <string>

#include "platform/windows/handle.h"
#include "platform/windows/ntdll.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

Error errorOf(DWORD code, Pid pid, const std::string& what) {
  const auto message = what + " of pid " + std::to_string(pid.value) + ": " + lastErrorText(code);
  if (code == ERROR_ACCESS_DENIED) return makeError(ErrorCode::kAccessDenied, message);
  if (code == ERROR_INVALID_PARAMETER) {
    return makeError(ErrorCode::kNoSuchProcess, "no process with pid " + std::to_string(pid.value));
  }
  return makeError(ErrorCode::kIo, message);
}

/// The name of an open thread, from GetThreadDescription where kernel32 has it.
std::string descriptionOf(HANDLE thread) {
  using GetThreadDescriptionFunction = HRESULT(WINAPI*)(HANDLE, PWSTR*);
  static const auto get_description =
      systemFunction<GetThreadDescriptionFunction>(L"kernel32.dll", "GetThreadDescription");
  if (get_description == nullptr) return {};
  PWSTR text = nullptr;
  if (FAILED(get_description(thread, &text)) || text == nullptr) return {};
  std::string name = toUtf8(text);
  ::LocalFree(text);
  return name;
}

}  // namespace

std::string threadDescription(DWORD tid) {
  Handle thread(::OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, tid));
  if (!thread.valid()) return {};
  return descriptionOf(thread.get());
}

std::optional<std::chrono::nanoseconds> threadCpuTime(HANDLE thread) {
  FILETIME created{};
  FILETIME exited{};
  FILETIME kernel{};
  FILETIME user{};
  if (::GetThreadTimes(thread, &created, &exited, &kernel, &user) == FALSE) return std::nullopt;
  // FILETIME durations count 100 ns.
  return std::chrono::nanoseconds((ticksOf(kernel) + ticksOf(user)) * 100);
}

std::optional<std::chrono::nanoseconds> threadCpuTime(DWORD tid) {
  Handle thread(::OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, tid));
  if (!thread.valid()) return std::nullopt;
  return threadCpuTime(thread.get());
}

std::uint64_t ticksOf(const FILETIME& time) {
  return (static_cast<std::uint64_t>(time.dwHighDateTime) << 32) | time.dwLowDateTime;
}

std::optional<std::chrono::system_clock::time_point> wallClockOf(std::uint64_t ticks) {
  // From 1601 to 1970, in 100 ns units.
  constexpr std::uint64_t kUnixEpoch = 116444736000000000ULL;
  if (ticks <= kUnixEpoch) return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds((ticks - kUnixEpoch) / 10)));
}

std::optional<std::uint64_t> creationTicks(HANDLE process) {
  FILETIME created{};
  FILETIME exited{};
  FILETIME kernel{};
  FILETIME user{};
  if (::GetProcessTimes(process, &created, &exited, &kernel, &user) == FALSE) return std::nullopt;
  return ticksOf(created);
}

Result<std::uint64_t> processStartTime(Pid pid) {
  Handle process(
      ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, static_cast<DWORD>(pid.value)));
  if (!process.valid()) return errorOf(::GetLastError(), pid, "opening");
  if (const auto created = creationTicks(process.get())) return *created;
  return errorOf(::GetLastError(), pid, "reading the creation time");
}

Result<ProcessThreads> listProcessThreads(Pid pid) {
  Handle snapshot(::CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS | TH32CS_SNAPTHREAD, 0));
  if (!snapshot.valid()) return errorOf(::GetLastError(), pid, "listing the threads");
  ProcessThreads out;
  out.pid = pid;
  const auto wanted = static_cast<DWORD>(pid.value);
  PROCESSENTRY32W process{};
  process.dwSize = sizeof(process);
  bool found = false;
  for (BOOL more = ::Process32FirstW(snapshot.get(), &process); more != FALSE;
       more = ::Process32NextW(snapshot.get(), &process)) {
    if (process.th32ProcessID == wanted) {
      out.name = toUtf8(process.szExeFile);
      found = true;
      break;
    }
  }
  if (!found) {
    return makeError(ErrorCode::kNoSuchProcess, "no process with pid " + std::to_string(pid.value));
  }
  THREADENTRY32 thread{};
  thread.dwSize = sizeof(thread);
  for (BOOL more = ::Thread32First(snapshot.get(), &thread); more != FALSE;
       more = ::Thread32Next(snapshot.get(), &thread)) {
    if (thread.th32OwnerProcessID == wanted) out.tids.push_back(thread.th32ThreadID);
  }
  // One handle per thread for its name and its CPU time. (NtQuerySystemInformation's process
  // list has every thread's times in one call, but of every process on the system: far more
  // than the threads of the one process a sample reads.)
  out.thread_names.reserve(out.tids.size());
  out.cpu_times.reserve(out.tids.size());
  for (const DWORD tid : out.tids) {
    Handle opened(::OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, tid));
    out.thread_names.push_back(opened.valid() ? descriptionOf(opened.get()) : std::string());
    out.cpu_times.push_back(opened.valid() ? threadCpuTime(opened.get()) : std::nullopt);
  }
  auto start = processStartTime(pid);
  if (!start) return start.error();
  out.start_time = *start;
  return out;
}

}  // namespace wctmon::windows_platform
