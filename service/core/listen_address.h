// Where the API or the metrics listen, as the configuration writes it ("unix:/PATH",
// "IPV4:PORT", "[IPV6]:PORT"), parsed and checked, and whether it is reachable only from this
// machine.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "model/result.h"

namespace wctmon {

/// One place the API listens, parsed: a Unix socket path, or a TCP host and port.
struct ListenAddress {
  std::filesystem::path unix_path;  // set for "unix:/path"
  std::string host;                 // "127.0.0.1", "::1" (without brackets)
  int port = 0;
  [[nodiscard]] bool isUnix() const { return !unix_path.empty(); }
  /// A Unix socket, or a TCP address in 127.0.0.0/8 or ::1.
  [[nodiscard]] bool isLocal() const;
};

/// Parses "unix:/path", "1.2.3.4:PORT" or "[::1]:PORT"; an error saying what is wrong when
/// malformed.
[[nodiscard]] Result<ListenAddress> parseListenAddress(std::string_view text);

}  // namespace wctmon
