// Listen addresses of the configuration: "unix:/PATH", "IPV4:PORT" or "[IPV6]:PORT", read
// without the system's resolver (no name is looked up), and which of them only this machine
// reaches.
#include "core/listen_address.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <vector>

namespace wctmon {
namespace {

/// The 16 bytes of an IPv6 literal without brackets ("::1", "fe80::1"); nullopt when it is none.
/// Embedded IPv4 forms ("::ffff:1.2.3.4") are not accepted.
std::optional<std::array<std::uint16_t, 8>> parseIpv6(std::string_view text) {
  std::array<std::uint16_t, 8> out{};
  std::vector<std::uint16_t> head;
  std::vector<std::uint16_t> tail;
  bool gap = false;
  const auto groups = [](std::string_view part, std::vector<std::uint16_t>& into) {
    if (part.empty()) return true;
    std::size_t start = 0;
    while (true) {
      const auto end = part.find(':', start);
      const auto group = part.substr(start, end == std::string_view::npos ? end : end - start);
      if (group.empty() || group.size() > 4) return false;
      unsigned value = 0;
      for (char ch : group) {
        const int digit = std::isdigit(static_cast<unsigned char>(ch))    ? ch - '0'
                          : std::isxdigit(static_cast<unsigned char>(ch)) ? (ch | 0x20) - 'a' + 10
                                                                          : -1;
        if (digit < 0) return false;
        value = value * 16 + static_cast<unsigned>(digit);
      }
      into.push_back(static_cast<std::uint16_t>(value));
      if (end == std::string_view::npos) return true;
      start = end + 1;
    }
  };
  if (const auto at = text.find("::"); at != std::string_view::npos) {
    gap = true;
    if (!groups(text.substr(0, at), head) || !groups(text.substr(at + 2), tail)) {
      return std::nullopt;
    }
  } else if (!groups(text, head)) {
    return std::nullopt;
  }
  const std::size_t n = head.size() + tail.size();
  if ((gap && n > 7) || (!gap && n != 8)) return std::nullopt;
  std::copy(head.begin(), head.end(), out.begin());
  std::copy(tail.begin(), tail.end(), out.end() - static_cast<std::ptrdiff_t>(tail.size()));
  return out;
}

/// The four bytes of a dotted IPv4 literal; nullopt when it is none.
std::optional<std::array<int, 4>> parseIpv4(std::string_view text) {
  std::array<int, 4> out{};
  std::size_t start = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto end = text.find('.', start);
    if ((i < 3) == (end == std::string_view::npos)) return std::nullopt;
    const auto part = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty() || part.size() > 3 || !std::all_of(part.begin(), part.end(), [](char ch) {
          return std::isdigit(static_cast<unsigned char>(ch));
        })) {
      return std::nullopt;
    }
    out[i] = std::stoi(std::string(part));
    if (out[i] > 255) return std::nullopt;
    start = end + 1;
  }
  return out;
}

}  // namespace

bool ListenAddress::isLocal() const {
  if (isUnix()) return true;
  if (const auto v4 = parseIpv4(host)) return (*v4)[0] == 127;
  const auto v6 = parseIpv6(host);
  return v6 && *v6 == std::array<std::uint16_t, 8>{0, 0, 0, 0, 0, 0, 0, 1};
}

Result<ListenAddress> parseListenAddress(std::string_view text) {
  ListenAddress out;
  if (text.starts_with("unix:")) {
    const auto path = text.substr(5);
    if (path.empty() || path.front() != '/') {
      return makeError(ErrorCode::kInvalidArgument,
                       "a Unix socket needs an absolute path (\"unix:/run/wctmon/api.sock\"), "
                       "got \"" +
                           std::string(text) + "\"");
    }
    // sun_path holds 108 bytes with its terminating zero.
    if (path.size() > 107) {
      return makeError(ErrorCode::kInvalidArgument,
                       "the Unix socket path is longer than the 107 bytes a socket address holds");
    }
    out.unix_path = std::string(path);
    return out;
  }
  const auto colon = text.rfind(':');
  const auto bad = [&](const std::string& reason) -> Result<ListenAddress> {
    return makeError(ErrorCode::kInvalidArgument,
                     "\"" + std::string(text) + "\": " + reason +
                         " (expected \"unix:/PATH\", \"IPV4:PORT\" or \"[IPV6]:PORT\")");
  };
  if (colon == std::string_view::npos) return bad("no port");
  const auto port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(),
                   [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) ||
      std::stoi(std::string(port)) > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  out.port = std::stoi(std::string(port));
  auto host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (!parseIpv6(host)) return bad("not an IPv6 address");
  } else if (!parseIpv4(host)) {
    return bad("the host must be an IP address (an IPv6 one in brackets)");
  }
  out.host = std::string(host);
  return out;
}

}  // namespace wctmon
