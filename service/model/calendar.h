#pragma once

#include <ctime>

namespace wctmon {

// Calendar fields of a time, thread-safe: the C library's reentrant forms differ by platform
// (gmtime_r/localtime_r, gmtime_s/localtime_s), so one definition per platform is chosen by
// CMake (calendar_posix.cpp, calendar_windows.cpp).

/// `t` in UTC.
[[nodiscard]] std::tm utcCalendar(std::time_t t);

/// `t` in the local time zone.
[[nodiscard]] std::tm localCalendar(std::time_t t);

}  // namespace wctmon
