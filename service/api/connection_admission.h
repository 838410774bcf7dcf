// Who makes room when a client connects to the API's own listeners and as many connections as
// they take are open, or as many as one peer may hold: the oldest that has not spoken HTTP/2,
// else the one idle the longest if it has been idle long enough, else nobody and the new one is
// refused; among that peer's own connections when it is the peer that is at its limit. Pure: the
// connections and the time are given, no socket is touched.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
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
    /// Who connected: a key of its address (TCP) or of its user (a Unix socket).
    std::uint64_t peer = 0;
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

  /// At most `max_open` connections, `max_per_peer` of one peer; one that has spoken may be
  /// closed for a new one once idle for `idle_enough`.
  ConnectionAdmission(std::size_t max_open, std::size_t max_per_peer, Clock::duration idle_enough)
      : max_open_(max_open), max_per_peer_(max_per_peer), idle_enough_(idle_enough) {}

  /// Whether a new connection needs room made for it while `open_count` are open, `peer_count`
  /// of them its peer's.
  [[nodiscard]] bool full(std::size_t open_count, std::size_t peer_count = 0) const {
    return open_count >= max_open_ || peer_count >= max_per_peer_;
  }

  /// What to do about a new connection of `peer` at `now`, the connections `open` (oldest first)
  /// open.
  [[nodiscard]] Decision admit(std::span<const OpenConnection> open, Clock::time_point now,
                               std::uint64_t peer = 0) const;

 private:
  std::size_t max_open_;
  std::size_t max_per_peer_;
  Clock::duration idle_enough_;
};

}  // namespace wctmon::api
