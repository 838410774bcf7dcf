// The rule by which the API's full listeners make room for a new connection, or refuse it.
#include "api/connection_admission.h"

#include <algorithm>

namespace wctmon::api {

ConnectionAdmission::Decision ConnectionAdmission::admit(std::span<const OpenConnection> open,
                                                         Clock::time_point now) const {
  if (!full(open.size())) return {Action::kAdmit, 0};
  // A connection that has not sent the HTTP/2 preface costs gRPC nothing yet and may never
  // speak: the oldest such one goes first.
  const auto silent =
      std::find_if(open.begin(), open.end(), [](const auto& c) { return !c.spoke; });
  if (silent != open.end()) {
    return {Action::kCloseSilent, static_cast<std::size_t>(silent - open.begin())};
  }
  // Every one has spoken: the one idle the longest makes room, if it has been idle as long as a
  // client may take to send the preface; a client that is working is never closed for another.
  const auto idle = std::min_element(open.begin(), open.end(), [](const auto& a, const auto& b) {
    return a.last_active < b.last_active;
  });
  if (idle == open.end() || idle->last_active > now - idle_enough_) return {Action::kRefuse, 0};
  return {Action::kCloseIdle, static_cast<std::size_t>(idle - open.begin())};
}

}  // namespace wctmon::api
