#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace wctmon::client {

/// "10s", "500ms", "2m", "1h", "7d" (a whole number and a unit); nothing for anything else.
[[nodiscard]] std::optional<std::chrono::milliseconds> parseDuration(std::string_view text);

/// A point in time as `--since` takes it: a duration back from `now` ("1h", "30m") or an RFC 3339
/// time ("2026-11-23T10:00:00Z", "2026-11-23T11:00:00+01:00"); nothing for anything else.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parseSince(
    const std::string& text, std::chrono::system_clock::time_point now);

}  // namespace wctmon::client
