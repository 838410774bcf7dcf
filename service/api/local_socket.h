#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "model/result.h"

namespace wctmon::api {

// The API's Unix sockets as the system offers them, one implementation per platform, chosen by
// CMake (local_socket_posix.cpp, local_socket_windows.cpp).

/// Whether the API can listen on a Unix socket here (not on Windows: loopback TCP there).
[[nodiscard]] bool localSocketsSupported();

/// Whether something accepts connections on the Unix socket at `path` (another service).
[[nodiscard]] bool socketAnswers(const std::filesystem::path& path);

/// The group whose members may use the API on this machine without being root (api.group): the
/// Unix socket is theirs to connect to and the reader token theirs to read.
struct LocalGroup {
  std::string name;
  /// The system's number for it (a gid).
  unsigned id = 0;
};

/// The group named `name`; nothing when `name` is empty, when no group has that name here, or
/// where the API has no Unix socket (Windows, whose reader token names Performance Monitor Users
/// in its ACL instead: secret_file_windows.cpp).
[[nodiscard]] std::optional<LocalGroup> findLocalGroup(const std::string& name);

/// Lets the owner and `group` connect to the socket at `path`, nobody else (mode 0660, the
/// service's user and `group`); without a group, the owner's own group keeps it.
[[nodiscard]] Status restrictSocket(const std::filesystem::path& path,
                                    const std::optional<LocalGroup>& group);

/// Lets `group` read the secret `file` too (mode 0640, group `group`); the owner keeps it.
[[nodiscard]] Status shareWithGroup(const std::filesystem::path& file, const LocalGroup& group);

}  // namespace wctmon::api
