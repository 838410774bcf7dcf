// Who makes room when a client connects to the API's own listeners and as many connections as
// they take are open: the oldest that has not spoken HTTP/2, else the one idle the longest if it
// has been idle long enough, else nobody and the new one is refused. Pure: the connections and
// the time are given, no socket is touched.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>

namespace wctmon::api {

/// The rule by which the API's listeners admit a connection when they are full. A few idle or
/// silent clients cannot keep everyone else out, and a busy client is never closed for a new
/// one.
class ConnectionAdmission {
 public:
  using Clock = std::chrono::steady_clock;

  /// What the rule knows of one open connection.
  struct OpenConnection {
    /// It has sent the HTTP/2 client preface.
    bool spoke = false;
    /// When bytes last came from either side.
    Clock::time_point last_active{};
  };

  /// What to do about a new connection.
  enum class Action {
    kAdmit,        // there is room
    kCloseSilent,  // close `victim`, which has not spoken HTTP/2, then admit
    kCloseIdle,    // close `victim`, idle the longest, then admit
    kRefuse,       // nobody may be closed: close the new one
  };
  struct Decision {
    Action action = Action::kAdmit;
    /// The connection to close, by its place in the open connections (kCloseSilent, kCloseIdle).
    std::size_t victim = 0;

    friend bool operator==(const Decision&, const Decision&) = default;
  };

  /// At most `max_open` connections; one that has spoken may be closed for a new one once idle
  /// for `idle_enough`.
  ConnectionAdmission(std::size_t max_open, Clock::duration idle_enough)
      : max_open_(max_open), idle_enough_(idle_enough) {}

  /// Whether a new connection needs room made for it while `open_count` are open.
  [[nodiscard]] bool full(std::size_t open_count) const { return open_count >= max_open_; }

  /// What to do about a new connection at `now`, the connections `open` (oldest first) open.
  [[nodiscard]] Decision admit(std::span<const OpenConnection> open, Clock::time_point now) const;

 private:
  std::size_t max_open_;
  Clock::duration idle_enough_;
};

}  // namespace wctmon::api
