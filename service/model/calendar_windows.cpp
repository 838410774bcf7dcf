#include "model/calendar.h"

namespace wctmon {

std::tm utcCalendar(std::time_t t) {
  std::tm tm{};
  ::gmtime_s(&tm, &t);
  return tm;
}

std::tm localCalendar(std::time_t t) {
  std::tm tm{};
  ::localtime_s(&tm, &t);
  return tm;
}

}  // namespace wctmon
