#include "client/human_time.h"

#include <ctime>

#include "model/calendar.h"
#include "model/format.h"

namespace wctmon::client {

std::string agoText(std::chrono::system_clock::time_point t,
                    std::chrono::system_clock::time_point now) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto age = duration_cast<milliseconds>(now - t);
  if (age < std::chrono::seconds(1) && age > -std::chrono::seconds(1)) return "just now";
  // durationText counts whole seconds from a second on: "12s", "3m05s", "2h05m".
  if (age < milliseconds(0)) return "in " + durationText(-age);
  return durationText(age) + " ago";
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
