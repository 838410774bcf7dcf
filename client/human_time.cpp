#include "client/human_time.h"

#include <ctime>

#include "model/calendar.h"

namespace wctmon::client {

namespace {

/// An age to the unit that matters at its size: "45s", "3m", "2h05m", "2d04h".
std::string ageText(std::chrono::milliseconds age) {
  const auto s = age.count() / 1000;
  const auto two = [](long long v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h" + two(s / 60 % 60) + "m";
  return std::to_string(s / 86400) + "d" + two(s / 3600 % 24) + "h";
}

}  // namespace

std::string agoText(std::chrono::system_clock::time_point t,
                    std::chrono::system_clock::time_point now) {
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - t);
  if (age < std::chrono::seconds(1) && age > -std::chrono::seconds(1)) return "just now";
  if (age < std::chrono::milliseconds(0)) return "in " + ageText(-age);
  return ageText(age) + " ago";
}

std::string utcTimeText(std::chrono::system_clock::time_point t) {
  const std::tm tm = utcCalendar(
      std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(t)));
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string timeAndAgo(std::chrono::system_clock::time_point t,
                       std::chrono::system_clock::time_point now) {
  return utcTimeText(t) + " (" + agoText(t, now) + ")";
}

}  // namespace wctmon::client
