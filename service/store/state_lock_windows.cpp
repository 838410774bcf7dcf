#include <windows.h>

#include <string>

#include "store/state_lock.h"

namespace wctmon {
namespace {

std::string holderOf(const std::filesystem::path& path) {
  // Opened beside the holder, which shares reading and writes.
  HANDLE file = ::CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE,
                              nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) return "unknown";
  char text[32] = {};
  DWORD n = 0;
  ::ReadFile(file, text, sizeof(text) - 1, &n, nullptr);
  ::CloseHandle(file);
  std::string pid(text, n);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == '\r' || pid.back() == ' ')) {
    pid.pop_back();
  }
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

Result<std::unique_ptr<StateLock>> StateLock::acquire(const std::filesystem::path& dir) {
  const auto path = dir / kStateLockFile;
  // Only reading is shared: a second service's open for writing fails with a sharing violation
  // for as long as this handle lives.
  HANDLE file = ::CreateFileW(path.c_str(), GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ, nullptr,
                              OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    const DWORD error = ::GetLastError();
    if (error == ERROR_SHARING_VIOLATION) {
      return makeError(ErrorCode::kBusy, "the state directory " + dir.string() +
                                             " is in use by another wctmon service (pid " +
                                             holderOf(path) + "; lock " + path.string() +
                                             "): one service per state directory");
    }
    return makeError(ErrorCode::kIo, "cannot open the lock file " + path.string() + " (error " +
                                         std::to_string(error) + ")");
  }
  const std::string pid = std::to_string(::GetCurrentProcessId()) + "\r\n";
  DWORD written = 0;
  ::SetEndOfFile(file);
  ::WriteFile(file, pid.data(), static_cast<DWORD>(pid.size()), &written, nullptr);
  ::FlushFileBuffers(file);
  return std::unique_ptr<StateLock>(new StateLock(reinterpret_cast<std::intptr_t>(file)));
}

StateLock::~StateLock() { ::CloseHandle(reinterpret_cast<HANDLE>(handle_)); }

}  // namespace wctmon
