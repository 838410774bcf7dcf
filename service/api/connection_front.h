#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/listen_address.h"
#include "model/result.h"

namespace grpc {
class Server;
}

namespace wctmon::api {

/// The API's own listeners for Unix sockets and plain TCP (not TLS: gRPC reads that itself).
/// It accepts each connection, gives gRPC one end of a socket pair and carries the bytes between
/// the client and that end on a thread of its own, reading the headers of the client's HTTP/2
/// frames on the way (api/http2_guard.h). This bounds the HTTP/2 "rapid reset" (streams opened
/// and cancelled in a loop) that Debian 12's gRPC does not bound, and which otherwise stalls every
/// client of the API and grows the service's memory by 100 MB a second. It closes a connection
///  - that does not speak HTTP/2 (random bytes, an HTTP/1.1 request);
///  - that cancels more than 300 streams at once (every stream it may have open, and more), or
///    more than 100 a second after that;
///  - that has not sent the HTTP/2 preface within 10 s, or is the oldest such one when 1,024
///    connections are open; when every one has spoken, the one idle the longest, if idle for
///    10 s, makes room; else the new one is closed (api/connection_admission.h). One peer (an
///    address, whatever its port; a local user on a Unix socket) holds at most 256 of them, and
///    makes room among its own: it cannot keep everyone else out.
/// All connections together pass gRPC at most 1,000 cancellations a second (after 1,000 at
/// once): past that, a connection that cancels waits, and one that would wait more than 2 s is
/// closed. Each closing is counted by reason and logged at most once in 10 s.
/// One implementation per platform, chosen by CMake: on Windows there is none (`supported()` is
/// false) and gRPC listens itself.
class ConnectionFront {
 public:
  static constexpr std::size_t kMaxConnections = 1024;
  static constexpr std::size_t kMaxConnectionsPerPeer = 256;
  static constexpr std::chrono::seconds kPrefaceTimeout{10};
  static constexpr double kResetsAtOnce = 300;
  static constexpr double kResetsPerSecond = 100;
  static constexpr double kAllResetsAtOnce = 1000;
  static constexpr double kAllResetsPerSecond = 1000;
  static constexpr std::chrono::seconds kMostPacing{2};

  /// Connections open now, and those closed since the start, by reason.
  struct Counts {
    std::size_t open = 0;
    std::uint64_t not_http2 = 0;
    std::uint64_t rapid_reset = 0;
    std::uint64_t no_preface = 0;
    std::uint64_t idle = 0;
    std::uint64_t over_limit = 0;
  };

  [[nodiscard]] static bool supported();

  /// Binds and listens on every address (Unix paths made fresh, TCP ports of 0 given one).
  [[nodiscard]] static Result<std::unique_ptr<ConnectionFront>> listen(
      const std::vector<ListenAddress>& addresses);

  virtual ~ConnectionFront() = default;

  /// Where it listens, one per address in order: "unix:/PATH", "127.0.0.1:PORT", "[::1]:PORT".
  [[nodiscard]] virtual std::vector<std::string> listening() const = 0;
  /// Starts accepting connections for `server`, which must outlive stop().
  virtual void serve(grpc::Server& server) = 0;
  /// Accepts no more connections; those open go on.
  virtual void stopAccepting() = 0;
  /// Closes every connection and ends its thread.
  virtual void stop() = 0;
  /// The client behind gRPC's name of a connection it was handed ("fd:12" becomes
  /// "ipv4:127.0.0.1:40312" or "unix:/run/wctmon/api.sock pid 812 uid 0"); others unchanged.
  [[nodiscard]] virtual std::string peerOf(const std::string& grpc_peer) const = 0;
  [[nodiscard]] virtual Counts counts() const = 0;
};

}  // namespace wctmon::api
