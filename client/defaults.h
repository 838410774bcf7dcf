#pragma once

#include <filesystem>
#include <string>

namespace wctmon::client {

/// The service's documented defaults on this platform (README, config/wctmon.schema.json), one
/// definition per platform, chosen by CMake (defaults_posix.cpp, defaults_windows.cpp).
struct Defaults {
  /// The API's Unix socket, tried first when it exists; empty where the service has none.
  std::filesystem::path socket;
  /// The API's loopback address.
  std::string tcp = "127.0.0.1:7787";
  /// Where the service keeps its token files.
  std::filesystem::path state_dir;
  /// Who may read the admin token there, for an error message.
  std::string token_readers;
};

[[nodiscard]] const Defaults& defaults();

}  // namespace wctmon::client
