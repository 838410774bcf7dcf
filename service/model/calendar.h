#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace wctmon {

// Calendar fields of a time, thread-safe: the C library's reentrant forms differ by platform
// (gmtime_r/localtime_r, gmtime_s/localtime_s), so one definition per platform is chosen by
// CMake (calendar_posix.cpp, calendar_windows.cpp).

/// `t` in UTC.
[[nodiscard]] std::tm utcCalendar(std::time_t t);

/// `t` in UTC as a file name can hold it: "20261125T162500Z".
[[nodiscard]] inline std::string utcStamp(std::chrono::system_clock::time_point t) {
  const std::tm tm = utcCalendar(std::chrono::system_clock::to_time_t(t));
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

/// `t` in UTC as RFC 3339 with milliseconds: "2026-11-25T16:25:00.123Z".
[[nodiscard]] inline std::string utcRfc3339(std::chrono::system_clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const auto seconds = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  const std::tm tm = utcCalendar(seconds);
  char text[40];
  const auto n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof(text) - n, ".%03dZ", static_cast<int>((ms % 1000 + 1000) % 1000));
  return text;
}

/// `t` in the local time zone.
[[nodiscard]] std::tm localCalendar(std::time_t t);

}  // namespace wctmon
