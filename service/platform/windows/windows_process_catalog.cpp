#include "platform/windows/windows_process_catalog.h"

#include <windows.h>
// tlhelp32.h and winternl.h need windows.h first.
#include <tlhelp32.h>
#include <winternl.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "platform/windows/handle.h"
#include "platform/windows/ntdll.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

constexpr DWORD kSystemIdlePid = 0;
constexpr DWORD kSystemPid = 4;
/// PROCESSINFOCLASS value of the command line (Windows 8.1 and later), which mingw-w64's
/// winternl.h does not name.
constexpr ULONG kProcessCommandLineInformation = 60;
constexpr LONG kStatusInfoLengthMismatch = static_cast<LONG>(0xC0000004UL);
constexpr LONG kStatusBufferTooSmall = static_cast<LONG>(0xC0000023UL);

bool isSystemProcess(DWORD pid) { return pid == kSystemIdlePid || pid == kSystemPid; }

/// A handle kept by someone else keeps an exited process's object, and OpenProcess succeeds
/// on it: only the exit code tells it has gone. (A process that exits with code 259 would pass
/// for alive; nothing cheaper tells them apart without SYNCHRONIZE access.)
bool isAlive(HANDLE process) {
  DWORD code = 0;
  return ::GetExitCodeProcess(process, &code) != FALSE && code == STILL_ACTIVE;
}

std::string imageName(HANDLE process) {
  // Image paths may be longer than MAX_PATH (\\?\ paths); 32,767 characters is the limit.
  std::wstring path(32768, L'\0');
  DWORD size = static_cast<DWORD>(path.size());
  if (::QueryFullProcessImageNameW(process, 0, path.data(), &size) == FALSE) return {};
  path.resize(size);
  return toUtf8(baseName(path));
}

using NtQueryInformationProcessFn = LONG(NTAPI*)(HANDLE, ULONG, PVOID, ULONG, PULONG);

NtQueryInformationProcessFn ntQueryInformationProcess() {
  static const auto fn = ntdllFunction<NtQueryInformationProcessFn>("NtQueryInformationProcess");
  return fn;
}

/// The command line as the kernel keeps it (Windows 8.1 and later), which needs no more than
/// PROCESS_QUERY_LIMITED_INFORMATION; nullopt when the query is refused.
std::optional<std::string> queriedCommandLine(HANDLE process, NtQueryInformationProcessFn query) {
  // A UNICODE_STRING followed by its text; 64-bit words keep the structure aligned.
  std::vector<std::uint64_t> buffer(512);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto bytes = static_cast<ULONG>(buffer.size() * sizeof(std::uint64_t));
    ULONG needed = 0;
    const LONG status =
        query(process, kProcessCommandLineInformation, buffer.data(), bytes, &needed);
    if ((status == kStatusInfoLengthMismatch || status == kStatusBufferTooSmall) &&
        needed > bytes) {
      buffer.resize(needed / sizeof(std::uint64_t) + 1);
      continue;
    }
    if (status < 0) return std::nullopt;
    const auto* text = reinterpret_cast<const UNICODE_STRING*>(buffer.data());
    if (text->Buffer == nullptr) return std::string();
    return toUtf8(std::wstring_view(text->Buffer, text->Length / sizeof(wchar_t)));
  }
  return std::nullopt;
}

/// The command line from the process's own memory: its PEB's process parameters, which need
/// PROCESS_VM_READ. The 64-bit PEB holds them for 32-bit (WOW64) processes too.
std::string commandLineFromPeb(HANDLE process, NtQueryInformationProcessFn query) {
  PROCESS_BASIC_INFORMATION basic{};
  if (query(process, ProcessBasicInformation, &basic, sizeof(basic), nullptr) < 0 ||
      basic.PebBaseAddress == nullptr) {
    return {};
  }
  const auto read = [process](const void* address, void* into, std::size_t size) {
    SIZE_T n = 0;
    return ::ReadProcessMemory(process, address, into, size, &n) != FALSE && n == size;
  };
  const auto* peb = reinterpret_cast<const std::byte*>(basic.PebBaseAddress);
  PRTL_USER_PROCESS_PARAMETERS parameters = nullptr;
  if (!read(peb + offsetof(PEB, ProcessParameters), &parameters, sizeof(parameters)) ||
      parameters == nullptr) {
    return {};
  }
  UNICODE_STRING line{};
  if (!read(reinterpret_cast<const std::byte*>(parameters) +
                offsetof(RTL_USER_PROCESS_PARAMETERS, CommandLine),
            &line, sizeof(line)) ||
      line.Buffer == nullptr) {
    return {};
  }
  std::wstring text(line.Length / sizeof(wchar_t), L'\0');
  if (!read(line.Buffer, text.data(), text.size() * sizeof(wchar_t))) return {};
  return toUtf8(text);
}

/// The command line, or empty when it cannot be read: a missing command line is not an error.
/// The documented query comes first; the PEB is read when it is refused, as it is by Windows
/// before 8.1 and by Wine, whose NtQueryInformationProcess does not know the class
/// (STATUS_INVALID_INFO_CLASS).
std::string commandLine(HANDLE process, bool can_read_memory) {
  const auto query = ntQueryInformationProcess();
  if (query == nullptr) return {};
  if (auto queried = queriedCommandLine(process, query)) return std::move(*queried);
  return can_read_memory ? commandLineFromPeb(process, query) : std::string();
}

/// What opening a process tells about it.
enum class Opened {
  kAlive,
  /// Exited, or no process has the pid.
  kGone,
  /// It exists but may not be opened: only Toolhelp's name is known.
  kDenied,
};

/// Opens `pid` for queries into `process`; with `memory`, for reading its memory too when that
/// is allowed (`can_read_memory` says whether it was).
Opened openProcess(DWORD pid, bool memory, Handle& process, bool& can_read_memory) {
  can_read_memory = false;
  if (memory) {
    process.reset(::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ, FALSE, pid));
    can_read_memory = process.valid();
  }
  if (!process.valid()) {
    process.reset(::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid));
  }
  if (!process.valid()) {
    return ::GetLastError() == ERROR_INVALID_PARAMETER ? Opened::kGone : Opened::kDenied;
  }
  return isAlive(process.get()) ? Opened::kAlive : Opened::kGone;
}

/// Fills what an open process tells beyond its identity.
void readImage(HANDLE process, bool with_cmdline, bool can_read_memory, ProcessInfo& info) {
  info.exe_name = imageName(process);
  if (with_cmdline) info.cmdline = commandLine(process, can_read_memory);
}

}  // namespace

std::optional<ProcessInfo> WindowsProcessCatalog::get(Pid pid, bool with_cmdline) {
  if (pid.value < 0 || isSystemProcess(static_cast<DWORD>(pid.value))) return std::nullopt;
  ProcessInfo info;
  info.identity.pid = pid;
  Handle process;
  bool can_read_memory = false;
  switch (openProcess(static_cast<DWORD>(pid.value), with_cmdline, process, can_read_memory)) {
    case Opened::kGone:
      return std::nullopt;
    case Opened::kAlive:
      info.identity.start_time = creationTicks(process.get()).value_or(0);
      info.started_at = wallClockOf(info.identity.start_time);
      readImage(process.get(), with_cmdline, can_read_memory, info);
      // Toolhelp's name is the image's base name: the same text without a snapshot of every
      // process.
      info.comm = info.exe_name;
      return info;
    case Opened::kDenied:
      break;
  }
  Handle snapshot(::CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0));
  if (!snapshot.valid()) return std::nullopt;
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof(entry);
  for (BOOL more = ::Process32FirstW(snapshot.get(), &entry); more != FALSE;
       more = ::Process32NextW(snapshot.get(), &entry)) {
    if (entry.th32ProcessID == static_cast<DWORD>(pid.value)) {
      info.comm = toUtf8(entry.szExeFile);
      return info;
    }
  }
  return std::nullopt;
}

std::vector<ProcessInfo> WindowsProcessCatalog::list(bool with_cmdline) {
  std::lock_guard lock(mutex_);
  std::vector<ProcessInfo> out;
  Handle snapshot(::CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0));
  if (!snapshot.valid()) return out;
  // Every process of the snapshot was created before this moment: one created after it under a
  // pid of the snapshot has taken the pid of a process that has exited since, and is listed
  // under its own name.
  FILETIME now{};
  ::GetSystemTimeAsFileTime(&now);
  const std::uint64_t snapshot_time = ticksOf(now);

  std::unordered_map<std::int32_t, ProcessInfo> seen;
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof(entry);
  for (BOOL more = ::Process32FirstW(snapshot.get(), &entry); more != FALSE;
       more = ::Process32NextW(snapshot.get(), &entry)) {
    if (isSystemProcess(entry.th32ProcessID)) continue;
    ProcessInfo info;
    info.identity.pid = Pid{static_cast<std::int32_t>(entry.th32ProcessID)};
    info.comm = toUtf8(entry.szExeFile);
    Handle process;
    bool can_read_memory = false;
    const Opened opened = openProcess(entry.th32ProcessID, with_cmdline, process, can_read_memory);
    if (opened == Opened::kGone) continue;
    if (opened == Opened::kAlive) {
      info.identity.start_time = creationTicks(process.get()).value_or(0);
      info.started_at = wallClockOf(info.identity.start_time);
      const auto known = known_.find(info.identity.pid.value);
      if (known != known_.end() && known->second.identity == info.identity &&
          (!with_cmdline || !known->second.cmdline.empty())) {
        out.push_back(known->second);
        seen.emplace(info.identity.pid.value, known->second);
        continue;
      }
      readImage(process.get(), with_cmdline, can_read_memory, info);
      if (info.identity.start_time > snapshot_time) info.comm = info.exe_name;
    }
    // A process that is still starting may have no name in the snapshot yet (Wine lists it
    // before its image is mapped): it takes its image's, or waits for the next listing.
    if (info.comm.empty()) info.comm = info.exe_name;
    if (info.comm.empty()) continue;
    out.push_back(info);
    if (info.identity.start_time != 0) seen.emplace(info.identity.pid.value, std::move(info));
  }
  known_ = std::move(seen);
  return out;
}

}  // namespace wctmon::windows_platform
