// The rule by which the API's full listeners make room for a new connection, or refuse it.
#include "api/connection_admission.h"

#include <algorithm>

namespace wctmon::api {

ConnectionAdmission::Decision ConnectionAdmission::admit(std::span<const OpenConnection> open,
                                                         Clock::time_point now,
                                                         std::uint64_t peer) const {
  const auto peer_count = static_cast<std::size_t>(
      std::count_if(open.begin(), open.end(), [peer](const auto& c) { return c.peer == peer; }));
  if (!full(open.size(), peer_count)) return {Action::kAdmit, 0};
  // A peer at its limit makes room among its own: it never closes another's connection.
  const bool own_only = peer_count >= max_per_peer_;
  const auto candidate = [&](const OpenConnection& c) { return !own_only || c.peer == peer; };
  // A connection that has not sent the HTTP/2 preface costs gRPC nothing yet and may never
  // speak: the oldest such one goes first.
  const auto silent = std::find_if(open.begin(), open.end(),
                                   [&](const auto& c) { return candidate(c) && !c.spoke; });
  if (silent != open.end()) {
    return {Action::kCloseSilent, static_cast<std::size_t>(silent - open.begin())};
  }
  // Every one has spoken: the one idle the longest makes room, if it has been idle as long as a
  // client may take to send the preface; a client that is working is never closed for another.
  auto idle = open.end();
  for (auto it = open.begin(); it != open.end(); ++it) {
    if (candidate(*it) && (idle == open.end() || it->last_active < idle->last_active)) idle = it;
  }
  if (idle == open.end() || idle->last_active > now - idle_enough_) return {Action::kRefuse, 0};
  return {Action::kCloseIdle, static_cast<std::size_t>(idle - open.begin())};
}

}  // namespace wctmon::api
