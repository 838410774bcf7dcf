#include "model/calendar.h"

namespace wctmon {

std::tm utcCalendar(std::time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  return tm;
}

std::tm localCalendar(std::time_t t) {
  std::tm tm{};
  ::localtime_r(&t, &tm);
  return tm;
}

}  // namespace wctmon
