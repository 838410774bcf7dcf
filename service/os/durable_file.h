#pragma once

#include <filesystem>
#include <system_error>

namespace wctmon {

// What making a file durable takes from the system, one implementation per platform, chosen by
// CMake (durable_file_posix.cpp, durable_file_windows.cpp).

/// Writes `file`'s data through to the disk; a file that cannot be opened is left alone.
void syncFile(const std::filesystem::path& file);

/// Makes the names in `dir` durable (fsync of the directory; NTFS journals names itself).
void syncDirectory(const std::filesystem::path& dir);

/// Gives `from` the name `to` unless `to` exists, which is kept (an error equal to
/// std::errc::file_exists): a hard link where the file system has them, a rename otherwise.
[[nodiscard]] std::error_code linkNoReplace(const std::filesystem::path& from,
                                            const std::filesystem::path& to);

}  // namespace wctmon
