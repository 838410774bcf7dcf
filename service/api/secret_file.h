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

/// Creates `file` holding `content`, readable and writable by the service's account only (mode
/// 0600; on Windows SYSTEM and Administrators only), written through to the disk. A file that
/// exists is left as it is (kExisted): two services starting at once never overwrite each
/// other's secret. A file half written is removed.
[[nodiscard]] Result<SecretFile> createSecretFile(const std::filesystem::path& file,
                                                  std::string_view content);

}  // namespace wctmon::api
