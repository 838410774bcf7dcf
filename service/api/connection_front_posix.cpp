#include <arpa/inet.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <functional>
#include <future>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <span>
#include <string_view>
#include <system_error>
#include <thread>

#include "api/connection_admission.h"
#include "api/connection_front.h"
#include "api/http2_guard.h"
#include "core/log_throttle.h"
#include "os/unique_fd.h"

namespace wctmon::api {
namespace {

namespace asio = boost::asio;
using Descriptor = asio::posix::stream_descriptor;

std::string errnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

Error socketError(const std::string& what, const std::string& where) {
  return makeError(ErrorCode::kIo,
                   "the API cannot " + what + " " + where + ": " + errnoText(errno));
}

/// A listening socket for `address`, non-blocking; `shown` says where, with the port it got.
Result<int> bindListener(const ListenAddress& address, std::string& shown) {
  if (address.isUnix()) {
    const auto path = address.unix_path.string();
    sockaddr_un name{};
    name.sun_family = AF_UNIX;
    if (path.size() >= sizeof(name.sun_path)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "api.listen: unix:" + path + ": the path is longer than a socket's " +
                           std::to_string(sizeof(name.sun_path) - 1) + " bytes");
    }
    std::memcpy(name.sun_path, path.c_str(), path.size() + 1);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return socketError("make a socket for", "unix:" + path);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&name), sizeof(name)) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
      return socketError("listen on", "unix:" + path);
    }
    shown = "unix:" + path;
    return fd.release();
  }
  const bool v6 = address.host.find(':') != std::string::npos;
  const std::string where = (v6 ? "[" + address.host + "]" : address.host) + ":";
  sockaddr_storage name{};
  socklen_t length = 0;
  if (v6) {
    auto& in = reinterpret_cast<sockaddr_in6&>(name);
    in.sin6_family = AF_INET6;
    in.sin6_port = htons(static_cast<std::uint16_t>(address.port));
    if (::inet_pton(AF_INET6, address.host.c_str(), &in.sin6_addr) != 1) {
      return makeError(ErrorCode::kInvalidArgument, "api.listen: not an address: " + where);
    }
    length = sizeof(in);
  } else {
    auto& in = reinterpret_cast<sockaddr_in&>(name);
    in.sin_family = AF_INET;
    in.sin_port = htons(static_cast<std::uint16_t>(address.port));
    if (::inet_pton(AF_INET, address.host.c_str(), &in.sin_addr) != 1) {
      return makeError(ErrorCode::kInvalidArgument, "api.listen: not an address: " + where);
    }
    length = sizeof(in);
  }
  UniqueFd fd(::socket(name.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return socketError("make a socket for", where);
  const int on = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (v6) ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&name), length) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0) {
    return socketError("listen on", where + std::to_string(address.port));
  }
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&name), &length) != 0) {
    return socketError("learn the port of", where + std::to_string(address.port));
  }
  const auto port = ntohs(v6 ? reinterpret_cast<sockaddr_in6&>(name).sin6_port
                             : reinterpret_cast<sockaddr_in&>(name).sin_port);
  shown = where + std::to_string(port);
  return fd.release();
}

/// Who is at the other end of an accepted connection.
struct Peer {
  /// Named as gRPC names its peers ("ipv4:ADDR:PORT"), with the process and user for a Unix
  /// socket.
  std::string shown;
  /// As the admission rule counts connections: its address without the port (TCP), or its user
  /// (a Unix socket).
  std::uint64_t key = 0;
};

Peer peerAt(int fd, const std::string& listener) {
  const auto keyed = [](std::string shown, std::string_view key) {
    return Peer{std::move(shown), std::hash<std::string_view>{}(key)};
  };
  sockaddr_storage name{};
  socklen_t length = sizeof(name);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&name), &length) != 0) {
    return keyed(listener, "");
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (name.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(name);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    return keyed(std::string("ipv4:") + text + ":" + std::to_string(ntohs(in.sin_port)),
                 std::string("4") + text);
  }
  if (name.ss_family == AF_INET6) {
    const auto& in = reinterpret_cast<const sockaddr_in6&>(name);
    ::inet_ntop(AF_INET6, &in.sin6_addr, text, sizeof(text));
    return keyed(std::string("ipv6:[") + text + "]:" + std::to_string(ntohs(in.sin6_port)),
                 std::string("6") + text);
  }
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0) {
    return keyed(listener + " pid " + std::to_string(credentials.pid) + " uid " +
                     std::to_string(credentials.uid),
                 "u" + std::to_string(credentials.uid));
  }
  return keyed(listener, "");
}

/// Why a connection was closed: its client left, or was at fault (counted, logged).
enum class Closing { kGone, kNotHttp2, kRapidReset, kNoPreface, kIdle, kOverLimit, kCount };
constexpr std::array<const char*, static_cast<std::size_t>(Closing::kCount)> kClosingReasons{
    "",
    "it does not speak HTTP/2",
    "it cancelled streams faster than the API allows (HTTP/2 rapid reset)",
    "it sent no HTTP/2 preface in time",
    "it was the longest idle when the connections were at their most",
    "too many connections are open"};

class PosixFront;

/// One client connection and the socket pair end that carries it to gRPC. Runs on the front's
/// thread only.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(PosixFront& front, std::string peer, std::string grpc_peer, std::uint64_t peer_key);

  /// Takes the client's descriptor and our end of the pair; on an error takes neither.
  boost::system::error_code attach(int client, int inner);
  void start();
  void close(Closing why);
  [[nodiscard]] bool spoke() const { return guard_.prefaceDone(); }
  /// When bytes last came from either side.
  [[nodiscard]] std::chrono::steady_clock::time_point lastActive() const { return last_active_; }
  [[nodiscard]] const std::string& peer() const { return peer_; }
  [[nodiscard]] const std::string& grpcPeer() const { return grpc_peer_; }
  /// Who it is from, as the admission rule counts (Peer::key).
  [[nodiscard]] std::uint64_t peerKey() const { return peer_key_; }
  [[nodiscard]] const Http2Guard& guard() const { return guard_; }

  std::list<std::shared_ptr<Connection>>::iterator position;

 private:
  void readClient();
  void writeInner(std::size_t n);
  void readInner();
  /// One side has said it sends no more: the other is told so; both done, it closes.
  void ended(Descriptor& other, bool& this_side);

  PosixFront& front_;
  Descriptor client_;
  Descriptor inner_;
  asio::steady_timer preface_deadline_;
  asio::steady_timer pacing_;
  Http2Guard guard_;
  std::vector<std::byte> up_ = std::vector<std::byte>(8 * 1024);
  std::vector<std::byte> down_ = std::vector<std::byte>(16 * 1024);
  std::string peer_;
  std::string grpc_peer_;
  std::uint64_t peer_key_;
  std::chrono::steady_clock::time_point last_active_ = std::chrono::steady_clock::now();
  bool client_ended_ = false;
  bool inner_ended_ = false;
  bool closed_ = false;
};

class PosixFront final : public ConnectionFront {
 public:
  struct Listener {
    Listener(asio::io_context& context, int fd, std::string where)
        : socket(context, fd), retry(context), shown(std::move(where)) {}
    Descriptor socket;
    asio::steady_timer retry;
    std::string shown;
  };

  PosixFront() : work_(asio::make_work_guard(context_)) {}
  ~PosixFront() override { stop(); }

  void add(int fd, std::string shown) {
    listeners_.push_back(std::make_unique<Listener>(context_, fd, std::move(shown)));
  }

  [[nodiscard]] std::vector<std::string> listening() const override {
    std::vector<std::string> out;
    for (const auto& l : listeners_) out.push_back(l->shown);
    return out;
  }

  void serve(grpc::Server& server) override {
    server_ = &server;
    for (auto& l : listeners_) accept(*l);
    thread_ = std::thread([this] {
      // A handler that throws (no memory) must not end the service: log it and go on.
      for (;;) {
        try {
          context_.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("the API's listener thread: {}", e.what());
        }
      }
    });
  }

  void stopAccepting() override {
    if (!thread_.joinable()) return;
    std::promise<void> done;
    asio::post(context_, [this, &done] {
      for (auto& l : listeners_) {
        boost::system::error_code ignored;
        l->retry.cancel();
        l->socket.close(ignored);
      }
      done.set_value();
    });
    done.get_future().wait();
  }

  void stop() override {
    if (!thread_.joinable()) return;
    stopAccepting();
    asio::post(context_, [this] {
      while (!open_.empty()) {
        const auto connection = open_.front();  // alive until its close() returns
        connection->close(Closing::kGone);
      }
    });
    work_.reset();
    thread_.join();
  }

  [[nodiscard]] std::string peerOf(const std::string& grpc_peer) const override {
    std::lock_guard lock(mutex_);
    const auto it = peers_.find(grpc_peer);
    return it == peers_.end() ? grpc_peer : it->second;
  }

  [[nodiscard]] Counts counts() const override {
    const auto count = [this](Closing why) {
      return closings_[static_cast<std::size_t>(why)].load();
    };
    return {open_count_.load(),         count(Closing::kNotHttp2), count(Closing::kRapidReset),
            count(Closing::kNoPreface), count(Closing::kIdle),     count(Closing::kOverLimit)};
  }

  asio::io_context& context() { return context_; }
  RefillingBudget& sharedResets() { return shared_resets_; }

  /// A connection has closed: forget it, count why, and say so when a client was at fault.
  void closed(Connection& connection, Closing why) {
    {
      // gRPC may have closed its end and a new connection been given the same descriptor
      // number already: only this connection's own entry goes.
      std::lock_guard lock(mutex_);
      if (auto it = peers_.find(connection.grpcPeer());
          it != peers_.end() && it->second == connection.peer()) {
        peers_.erase(it);
      }
    }
    open_.erase(connection.position);
    open_count_ = open_.size();
    if (why == Closing::kGone) return;
    ++closings_[static_cast<std::size_t>(why)];
    logClosing(connection.peer(), kClosingReasons[static_cast<std::size_t>(why)],
               connection.guard());
  }

 private:
  void logClosing(const std::string& peer, const char* reason, const Http2Guard& guard) {
    if (const auto others = log_.admit()) {
      spdlog::warn("API connection from {} closed: {} ({} streams opened, {} cancelled){}", peer,
                   reason, guard.streams(), guard.resets(),
                   LogThrottle::heldBack(
                       *others, "more closed for a client's fault since the last such line"));
    }
  }

  void accept(Listener& listener) {
    listener.socket.async_wait(Descriptor::wait_read, [this, &listener](auto ec) {
      if (ec) return;  // closed: no more accepting
      // A few at a time, so that a flood of connections does not hold the thread.
      for (int i = 0; i < 64; ++i) {
        const int fd = ::accept4(listener.socket.native_handle(), nullptr, nullptr,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
          admit(fd, listener.shown);
          continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          // Out of descriptors or memory: the pending connection stays queued; try again soon
          // rather than spin on a socket that stays readable.
          if (const auto others = log_.admit()) {
            spdlog::warn("API cannot accept a connection on {}: {}{}", listener.shown,
                         errnoText(errno), LogThrottle::heldBack(*others, "more such lines held"));
          }
          listener.retry.expires_after(std::chrono::milliseconds(100));
          listener.retry.async_wait([this, &listener](auto wait_ec) {
            if (!wait_ec) accept(listener);
          });
          return;
        }
        break;
      }
      accept(listener);
    });
  }

  void admit(int client_fd, const std::string& listener) {
    UniqueFd client(client_fd);
    // What gRPC does on its own sockets: small frames go at once, not after the last one's
    // acknowledgement (a 40 ms stall per answer otherwise). Not a TCP socket: no harm.
    const int on = 1;
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    const Peer who = peerAt(client.get(), listener);
    const std::string& peer = who.shown;
    const std::uint64_t peer_key = who.key;
    const auto peer_count = static_cast<std::size_t>(std::count_if(
        open_.begin(), open_.end(), [&](const auto& c) { return c->peerKey() == peer_key; }));
    if (admission_.full(open_.size(), peer_count)) {
      // Room is made as the admission rule says (api/connection_admission.h).
      room_.clear();
      for (const auto& c : open_) room_.push_back({c->spoke(), c->lastActive(), c->peerKey()});
      const auto decision = admission_.admit(room_, std::chrono::steady_clock::now(), peer_key);
      if (decision.action == ConnectionAdmission::Action::kRefuse) {
        ++closings_[static_cast<std::size_t>(Closing::kOverLimit)];
        if (const auto others = log_.admit()) {
          spdlog::warn("API connection from {} refused: {}{}", peer,
                       peer_count >= kMaxConnectionsPerPeer
                           ? std::to_string(peer_count) + " connections of its peer are open"
                           : std::to_string(kMaxConnections) + " connections are open",
                       LogThrottle::heldBack(*others, "more such lines held"));
        }
        return;
      }
      // Alive until its close() returns.
      const auto evicted = *std::next(open_.begin(), static_cast<std::ptrdiff_t>(decision.victim));
      evicted->close(decision.action == ConnectionAdmission::Action::kCloseSilent
                         ? Closing::kNoPreface
                         : Closing::kIdle);
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
      if (const auto others = log_.admit()) {
        spdlog::warn("API connection from {} dropped: no socket pair for it: {}", peer,
                     errnoText(errno));
      }
      return;
    }
    UniqueFd ours(pair[0]);
    UniqueFd grpcs(pair[1]);
    // gRPC names a connection it is handed by its descriptor.
    const std::string grpc_peer = "fd:" + std::to_string(pair[1]);
    std::shared_ptr<Connection> connection;
    std::string why;
    try {
      connection = std::make_shared<Connection>(*this, peer, grpc_peer, peer_key);
      if (const auto ec = connection->attach(client.get(), ours.get())) why = ec.message();
    } catch (const std::exception& e) {  // no memory
      why = e.what();
    }
    if (!why.empty()) {
      if (const auto others = log_.admit()) {
        spdlog::warn("API connection from {} dropped: {}", peer, why);
      }
      return;
    }
    client.release();
    ours.release();
    {
      std::lock_guard lock(mutex_);
      peers_[grpc_peer] = peer;
    }
    open_.push_back(connection);
    connection->position = std::prev(open_.end());
    open_count_ = open_.size();
    grpc::AddInsecureChannelFromFd(server_, grpcs.release());  // gRPC's from here
    connection->start();
  }

  asio::io_context context_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::thread thread_;
  grpc::Server* server_ = nullptr;
  RefillingBudget shared_resets_{kAllResetsAtOnce, kAllResetsPerSecond};
  std::list<std::shared_ptr<Connection>> open_;  // the oldest first; the front's thread only
  ConnectionAdmission admission_{kMaxConnections, kMaxConnectionsPerPeer, kPrefaceTimeout};
  std::vector<ConnectionAdmission::OpenConnection> room_;  // what it is told of open_
  mutable std::mutex mutex_;
  std::map<std::string, std::string> peers_;  // gRPC's name ("fd:N") -> the client's
  std::atomic<std::size_t> open_count_{0};
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Closing::kCount)> closings_{};
  LogThrottle log_{std::chrono::seconds(10)};
};

Connection::Connection(PosixFront& front, std::string peer, std::string grpc_peer,
                       std::uint64_t peer_key)
    : front_(front),
      client_(front.context()),
      inner_(front.context()),
      preface_deadline_(front.context()),
      pacing_(front.context()),
      guard_(ConnectionFront::kResetsAtOnce, ConnectionFront::kResetsPerSecond),
      peer_(std::move(peer)),
      grpc_peer_(std::move(grpc_peer)),
      peer_key_(peer_key) {}

boost::system::error_code Connection::attach(int client, int inner) {
  boost::system::error_code ec;
  client_.assign(client, ec);
  if (!ec) inner_.assign(inner, ec);
  if (ec) {
    if (client_.is_open()) static_cast<void>(client_.release());
    if (inner_.is_open()) static_cast<void>(inner_.release());
  }
  return ec;
}

void Connection::ended(Descriptor& other, bool& this_side) {
  this_side = true;
  if (client_ended_ && inner_ended_) {
    close(Closing::kGone);
    return;
  }
  ::shutdown(other.native_handle(), SHUT_WR);
}

void Connection::start() {
  preface_deadline_.expires_after(ConnectionFront::kPrefaceTimeout);
  preface_deadline_.async_wait([self = shared_from_this()](auto ec) {
    if (!ec && !self->spoke()) self->close(Closing::kNoPreface);
  });
  readClient();
  readInner();
}

void Connection::readClient() {
  client_.async_read_some(asio::buffer(up_), [self = shared_from_this()](auto ec, std::size_t n) {
    if (self->closed_) return;
    if (ec == asio::error::eof) {
      self->ended(self->inner_, self->client_ended_);  // gRPC still answers what it was asked
      return;
    }
    if (ec) {
      self->close(Closing::kGone);
      return;
    }
    self->last_active_ = std::chrono::steady_clock::now();
    switch (self->guard_.feed(std::span(self->up_.data(), n), Http2Guard::Clock::now())) {
      case Http2Guard::Verdict::kOk:
        break;
      case Http2Guard::Verdict::kNotHttp2:
        self->close(Closing::kNotHttp2);
        return;
      case Http2Guard::Verdict::kRapidReset:
        self->close(Closing::kRapidReset);
        return;
    }
    // Cancellations also spend what all connections may cancel together: past it, the bytes
    // wait (and nothing more is read from this client) until it has refilled.
    if (const auto resets = self->guard_.takeNewResets(); resets > 0) {
      const auto wait = self->front_.sharedResets().spend(
          static_cast<double>(resets), Http2Guard::Clock::now(), ConnectionFront::kMostPacing);
      if (!wait) {
        self->close(Closing::kRapidReset);
        return;
      }
      if (*wait > Http2Guard::Clock::duration::zero()) {
        self->pacing_.expires_after(*wait);
        self->pacing_.async_wait([self, n](auto wait_ec) {
          if (!wait_ec && !self->closed_) self->writeInner(n);
        });
        return;
      }
    }
    self->writeInner(n);
  });
}

void Connection::writeInner(std::size_t n) {
  asio::async_write(inner_, asio::buffer(up_.data(), n),
                    [self = shared_from_this()](auto ec, auto) {
                      if (self->closed_) return;
                      if (ec) {
                        self->close(Closing::kGone);
                        return;
                      }
                      self->readClient();
                    });
}

void Connection::readInner() {
  inner_.async_read_some(asio::buffer(down_), [self = shared_from_this()](auto ec, std::size_t n) {
    if (self->closed_) return;
    if (ec == asio::error::eof) {
      self->ended(self->client_, self->inner_ended_);  // the client reads what is left
      return;
    }
    if (ec) {
      self->close(Closing::kGone);
      return;
    }
    self->last_active_ = std::chrono::steady_clock::now();
    asio::async_write(self->client_, asio::buffer(self->down_.data(), n),
                      [self](auto write_ec, auto) {
                        if (self->closed_) return;
                        if (write_ec) {
                          self->close(Closing::kGone);
                          return;
                        }
                        self->readInner();
                      });
  });
}

void Connection::close(Closing why) {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  preface_deadline_.cancel();
  pacing_.cancel();
  client_.close(ignored);
  inner_.close(ignored);
  front_.closed(*this, why);  // may drop the last reference but the caller's
}

}  // namespace

bool ConnectionFront::supported() { return true; }

Result<std::unique_ptr<ConnectionFront>> ConnectionFront::listen(
    const std::vector<ListenAddress>& addresses) {
  auto front = std::make_unique<PosixFront>();
  for (const auto& address : addresses) {
    std::string shown;
    auto fd = bindListener(address, shown);
    if (!fd) return fd.error();
    front->add(*fd, std::move(shown));
  }
  return std::unique_ptr<ConnectionFront>(std::move(front));
}

}  // namespace wctmon::api
