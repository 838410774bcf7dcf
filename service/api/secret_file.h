#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "model/result.h"

namespace wctmon::api {

// What making a secret needs from the system, one implementation per platform, chosen by CMake
// (secret_file_posix.cpp, secret_file_windows.cpp).

/// `count` random bytes from the system's generator (getrandom, BCryptGenRandom).
[[nodiscard]] Result<std::string> randomBytes(std::size_t count);

/// Whether createSecretFile made the file or found one there.
enum class SecretFile { kCreated, kExisted };

/// Who may read a secret besides the service.
enum class SecretReaders {
  kNobody,
  /// On Windows the members of the built-in group Performance Monitor Users (BUILTIN\Performance
  /// Monitor Users, S-1-5-32-558), the group Windows has for reading a machine's performance
  /// data without being an administrator. On POSIX nobody either (mode 0600): the token is
  /// given by copy, or the API's Unix socket is used.
  kMonitoringUsers,
};

/// Creates `file` holding `content`, readable and writable by the service's account only (mode
/// 0600; on Windows SYSTEM, Administrators and its owner), plus `readers`, written through to the
/// disk. A file that exists is left as it is (kExisted): two services starting at once never
/// overwrite each other's secret. A file half written is removed.
[[nodiscard]] Result<SecretFile> createSecretFile(const std::filesystem::path& file,
                                                  std::string_view content,
                                                  SecretReaders readers = SecretReaders::kNobody);

/// The most a secret file may hold: a token is 64 characters.
inline constexpr std::size_t kMaxSecretBytes = 4096;

/// What the secret file `file` holds: a regular file (not followed through a link), at most
/// kMaxSecretBytes; on POSIX also the service's account's own, which no one else may change and
/// not every user may read (a file planted by another user, or readable by all, is refused).
[[nodiscard]] Result<std::string> readSecretFile(const std::filesystem::path& file);

}  // namespace wctmon::api
