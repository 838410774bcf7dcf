#pragma once

#include <chrono>
#include <string>

namespace wctmon::client {

/// How long ago `t` was, as tables show it, to the unit that matters: "5s ago", "3m ago",
/// "2h05m ago", "2d04h ago"; "just now" within a second, "in 4s" for a time ahead of `now` (a
/// server whose clock runs ahead).
[[nodiscard]] std::string agoText(std::chrono::system_clock::time_point t,
                                  std::chrono::system_clock::time_point now);

/// A wall-clock time, to the second, in UTC and saying so: "2026-11-27 10:00:01 UTC". The
/// same on every machine that reads it, whatever the time zone of the server or the client.
[[nodiscard]] std::string utcTimeText(std::chrono::system_clock::time_point t);

/// Both: "2026-11-27 10:00:01 UTC (3m ago)".
[[nodiscard]] std::string timeAndAgo(std::chrono::system_clock::time_point t,
                                     std::chrono::system_clock::time_point now);

}  // namespace wctmon::client
