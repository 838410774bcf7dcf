#include "runtime/network_prober.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include "grpc/health/v1/health.grpc.pb.h"
#include "runtime/http_exchange.h"

namespace wctmon {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

/// The most of an HTTP answer read: a liveness endpoint's answer is short, and a probe must not
/// read a large page every interval.
constexpr std::size_t kMaxResponseBytes = 64 * 1024;

std::chrono::microseconds since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
}

std::string timedOut(const ProbeConfig& probe, std::string_view while_) {
  return "timed out after " + std::to_string(probe.timeout.count()) + " ms " + std::string(while_);
}

/// The verdict on an HTTP answer.
ProbeOutcome judgeHttp(const ProbeConfig& probe, const std::string& text) {
  ProbeOutcome out;
  const int status = httpStatus(text);
  if (status == 0) {
    out.detail = text.empty() ? "closed without an answer" : "not an HTTP answer";
    return out;
  }
  out.detail = text.substr(9, text.find("\r\n") - 9);
  if (status != probe.status) {
    out.detail += " (expected " + std::to_string(probe.status) + ")";
    return out;
  }
  const auto body = text.find("\r\n\r\n");
  if (!probe.body_contains.empty() &&
      (body == std::string::npos || text.find(probe.body_contains, body) == std::string::npos)) {
    out.detail += ", without \"" + probe.body_contains + "\" in the body";
    return out;
  }
  out.passed = true;
  return out;
}

/// One TCP or HTTP(S) probe: resolve, connect, (handshake, request, answer), each step racing
/// the deadline's timer. Every handler runs on the probe's strand; the first verdict wins.
template <typename Stream>
class SocketProbe : public std::enable_shared_from_this<SocketProbe<Stream>> {
 public:
  template <typename... StreamArgs>
  SocketProbe(asio::strand<asio::io_context::executor_type> strand, ProbeConfig probe,
              std::function<void(ProbeOutcome)> done, StreamArgs&&... stream_args)
      : strand_(strand),
        probe_(std::move(probe)),
        done_(std::move(done)),
        resolver_(strand),
        timer_(strand),
        stream_(strand, std::forward<StreamArgs>(stream_args)...) {}

  void start() {
    start_ = SteadyClock::now();
    auto self = this->shared_from_this();
    timer_.expires_after(probe_.timeout);
    timer_.async_wait([self](const boost::system::error_code& ec) {
      // Cancelled once the probe has its verdict; a timer that had expired by then still
      // delivers success, and finish() ignores it.
      if (ec) return;
      self->finish(false, timedOut(self->probe_, self->step_));
    });
    const auto& endpoint =
        probe_.type == ProbeConfig::Type::kHttp ? probe_.url.endpoint : probe_.endpoint;
    step_ = "resolving " + endpoint.host;
    resolver_.async_resolve(
        endpoint.host, std::to_string(endpoint.port),
        [self](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
          if (self->finished_) return;
          if (ec) return self->finish(false, "cannot resolve: " + ec.message());
          self->connect(results);
        });
  }

 private:
  auto& socket() { return stream_.lowest_layer(); }

  void connect(const tcp::resolver::results_type& results) {
    step_ = "connecting";
    auto self = this->shared_from_this();
    asio::async_connect(socket(), results,
                        [self](const boost::system::error_code& ec, const tcp::endpoint&) {
                          if (self->finished_) return;
                          if (ec) return self->finish(false, ec.message());
                          if (self->probe_.type != ProbeConfig::Type::kHttp) {
                            return self->finish(true, "connected");
                          }
                          self->handshake();
                        });
  }

  void handshake();

  void request() {
    step_ = "waiting for the answer";
    const auto& url = probe_.url;
    request_ = "GET " + url.target + " HTTP/1.1\r\nHost: " + url.endpoint.text() +
               "\r\nUser-Agent: wctmon-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n";
    auto self = this->shared_from_this();
    asio::async_write(stream_, asio::buffer(request_),
                      [self](const boost::system::error_code& ec, std::size_t) {
                        if (self->finished_) return;
                        if (ec) return self->finish(false, "cannot send: " + ec.message());
                        self->read();
                      });
  }

  void read() {
    auto self = this->shared_from_this();
    stream_.async_read_some(
        asio::buffer(chunk_), [self](const boost::system::error_code& ec, std::size_t n) {
          if (self->finished_) return;
          self->response_.append(self->chunk_.data(), n);
          const bool full = self->response_.size() >= kMaxResponseBytes;
          if (!ec && !full && !httpResponseComplete(self->response_)) return self->read();
          if (ec && ec != asio::error::eof && ec != asio::ssl::error::stream_truncated &&
              self->response_.empty()) {
            return self->finish(false, "no answer: " + ec.message());
          }
          auto verdict = judgeHttp(self->probe_, self->response_);
          self->finish(verdict.passed, std::move(verdict.detail));
        });
  }

  void finish(bool passed, std::string detail) {
    if (finished_) return;
    finished_ = true;
    boost::system::error_code ignored;
    timer_.cancel();
    resolver_.cancel();
    socket().close(ignored);
    auto done = std::move(done_);
    done(ProbeOutcome{passed, since(start_), std::move(detail)});
  }

  asio::strand<asio::io_context::executor_type> strand_;
  ProbeConfig probe_;
  std::function<void(ProbeOutcome)> done_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  Stream stream_;
  SteadyClock::time_point start_;
  std::string step_;
  std::string request_;
  std::string response_;
  std::array<char, 4096> chunk_{};
  bool finished_ = false;
};

/// A plain socket: nothing to shake hands over.
template <>
void SocketProbe<tcp::socket>::handshake() {
  request();
}

using TlsStream = asio::ssl::stream<tcp::socket>;

template <>
void SocketProbe<TlsStream>::handshake() {
  step_ = "in the TLS handshake";
  // The name the server's certificate is for (SNI); the certificate itself is not checked: a
  // liveness probe asks whether the server answers, as Kubernetes' HTTPS probes do.
  setTlsServerName(stream_.native_handle(), probe_.url.endpoint.host);
  auto self = shared_from_this();
  stream_.async_handshake(asio::ssl::stream_base::client,
                          [self](const boost::system::error_code& ec) {
                            if (self->finished_) return;
                            if (ec) return self->finish(false, "TLS handshake: " + ec.message());
                            self->request();
                          });
}

}  // namespace

NetworkProber::NetworkProber(asio::io_context& io, Executor blocking, LocalProber& local)
    : io_(io), blocking_(std::move(blocking)), local_(local) {}

NetworkProber::~NetworkProber() = default;

void NetworkProber::asyncProbe(const ProbeConfig& probe, std::function<void(ProbeOutcome)> done) {
  switch (probe.type) {
    case ProbeConfig::Type::kTcp:
      std::make_shared<SocketProbe<tcp::socket>>(asio::make_strand(io_), probe, std::move(done))
          ->start();
      return;
    case ProbeConfig::Type::kHttp:
      if (probe.url.tls) {
        // A context per probe: cheap next to the handshake, and nothing shared between threads.
        auto tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
        tls->set_verify_mode(asio::ssl::verify_none);
        auto op = std::make_shared<SocketProbe<TlsStream>>(
            asio::make_strand(io_), probe,
            [tls, done = std::move(done)](ProbeOutcome o) { done(std::move(o)); }, *tls);
        op->start();
      } else {
        std::make_shared<SocketProbe<tcp::socket>>(asio::make_strand(io_), probe, std::move(done))
            ->start();
      }
      return;
    case ProbeConfig::Type::kGrpcHealth:
      probeGrpc(probe, std::move(done));
      return;
    case ProbeConfig::Type::kUnix:
      blocking_([this, probe, done = std::move(done)] {
        done(local_.connectUnix(probe.path, probe.timeout));
      });
      return;
    case ProbeConfig::Type::kExec:
      blocking_([this, probe, done = std::move(done)] { done(local_.runCommand(probe)); });
      return;
  }
}

void NetworkProber::probeGrpc(const ProbeConfig& probe, std::function<void(ProbeOutcome)> done) {
  const auto address = probe.endpoint.text();
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard lock(mutex_);
    auto& kept = channels_[address];
    if (kept == nullptr) kept = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    channel = kept;
  }
  struct Call {
    std::unique_ptr<grpc::health::v1::Health::Stub> stub;
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    SteadyClock::time_point start = SteadyClock::now();
  };
  auto call = std::make_shared<Call>();
  call->stub = grpc::health::v1::Health::NewStub(channel);
  call->request.set_service(probe.service);
  call->context.set_deadline(std::chrono::system_clock::now() + probe.timeout);
  // Waits for the connection within the deadline, as a client in trouble would: a server that
  // does not accept is what the probe is for.
  call->context.set_wait_for_ready(true);
  call->stub->async()->Check(
      &call->context, &call->request, &call->response,
      [call, timeout = probe.timeout, done = std::move(done)](grpc::Status status) {
        ProbeOutcome out;
        out.latency = since(call->start);
        if (!status.ok()) {
          out.detail = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                           ? "timed out after " + std::to_string(timeout.count()) + " ms"
                           : "health check failed: " + status.error_message();
        } else {
          const auto serving = call->response.status();
          out.passed = serving == grpc::health::v1::HealthCheckResponse::SERVING;
          out.detail = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(serving);
        }
        done(std::move(out));
      });
}

}  // namespace wctmon
