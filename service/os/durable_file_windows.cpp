#include <windows.h>

#include "os/durable_file.h"

namespace wctmon {

void syncFile(const std::filesystem::path& file) {
  HANDLE handle = ::CreateFileW(file.c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
                                nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (handle == INVALID_HANDLE_VALUE) return;
  ::FlushFileBuffers(handle);
  ::CloseHandle(handle);
}

void syncDirectory(const std::filesystem::path& /*dir*/) {}

std::error_code linkNoReplace(const std::filesystem::path& from, const std::filesystem::path& to) {
  // MoveFileExW without MOVEFILE_REPLACE_EXISTING refuses an existing name; write-through so
  // that the name is on the disk when this returns.
  if (::MoveFileExW(from.c_str(), to.c_str(), MOVEFILE_WRITE_THROUGH) != FALSE) return {};
  const DWORD error = ::GetLastError();
  if (error == ERROR_ALREADY_EXISTS || error == ERROR_FILE_EXISTS) {
    return std::make_error_code(std::errc::file_exists);
  }
  return {static_cast<int>(error), std::system_category()};
}

}  // namespace wctmon
