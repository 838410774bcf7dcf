#pragma once

#include <filesystem>

namespace wctmon::api {

// The API's Unix sockets as the system offers them, one implementation per platform, chosen by
// CMake (local_socket_posix.cpp, local_socket_windows.cpp).

/// Whether the API can listen on a Unix socket here (not on Windows: loopback TCP there).
[[nodiscard]] bool localSocketsSupported();

/// Whether something accepts connections on the Unix socket at `path` (another service).
[[nodiscard]] bool socketAnswers(const std::filesystem::path& path);

/// Lets the service's group connect, nobody else (mode 0660).
void restrictSocket(const std::filesystem::path& path);

}  // namespace wctmon::api
