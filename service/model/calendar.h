#pragma once

#include <chrono>
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

/// `t` in the local time zone.
[[nodiscard]] std::tm localCalendar(std::time_t t);

}  // namespace wctmon
