#include "runtime/http_exchange.h"

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <optional>

#include "runtime/system_cas.h"

namespace wctmon {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

/// The most of an answer kept: receivers answer in a few bytes, and an answer that is a large
/// page is an error page whose start says enough.
constexpr std::size_t kMaxAnswerBytes = 256 * 1024;

std::string lowerCase(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::string requestText(const HttpRequest& r) {
  std::string text = r.method + " " + r.url.target + " HTTP/1.1\r\nHost: " + r.url.endpoint.text() +
                     "\r\nUser-Agent: wctmon\r\nConnection: close\r\n";
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT") {
    text += "Content-Type: " + r.content_type +
            "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  for (const auto& [name, value] : r.headers) text += name + ": " + value + "\r\n";
  return text + "\r\n" + r.body;
}

/// One exchange over `Stream` (a socket, or TLS over one), driven by the caller's run of `io`:
/// each step starts the next; the first error ends it.
template <typename Stream>
class Exchange {
 public:
  Exchange(asio::io_context& io, const HttpRequest& request, Stream& stream)
      : request_(request), resolver_(io), stream_(stream), text_(requestText(request)) {}

  void start() {
    step = "resolving " + request_.url.endpoint.host;
    resolver_.async_resolve(request_.url.endpoint.host, std::to_string(request_.url.endpoint.port),
                            [this](const boost::system::error_code& ec, const auto& results) {
                              if (ec) return fail("cannot resolve: " + ec.message());
                              connect(results);
                            });
  }

  /// What it came to: the answer's text, or why there is none. Empty while under way.
  std::optional<Result<std::string>> outcome;
  /// The step it was at, for a timeout's message.
  std::string step;

  void cancel() {
    boost::system::error_code ignored;
    resolver_.cancel();
    stream_.lowest_layer().close(ignored);
  }

 private:
  void connect(const tcp::resolver::results_type& results) {
    step = "connecting to " + request_.url.endpoint.text();
    asio::async_connect(stream_.lowest_layer(), results,
                        [this](const boost::system::error_code& ec, const tcp::endpoint&) {
                          if (ec) return fail("cannot connect: " + ec.message());
                          handshake();
                        });
  }

  void handshake();

  void send() {
    step = "sending the request";
    asio::async_write(stream_, asio::buffer(text_),
                      [this](const boost::system::error_code& ec, std::size_t) {
                        if (ec) return fail("cannot send: " + ec.message());
                        step = "waiting for the answer";
                        read();
                      });
  }

  void read() {
    stream_.async_read_some(
        asio::buffer(chunk_), [this](const boost::system::error_code& ec, std::size_t n) {
          answer_.append(chunk_.data(), n);
          const bool whole = httpResponseComplete(answer_) || answer_.size() >= kMaxAnswerBytes;
          if (!ec && !whole) return read();
          if (ec && !whole && httpStatus(answer_) == 0) {
            return fail(answer_.empty() ? "closed without an answer: " + ec.message()
                                        : "not an HTTP answer");
          }
          outcome = std::move(answer_);
        });
  }

  void fail(std::string why) {
    if (!outcome) outcome = makeError(ErrorCode::kIo, std::move(why));
  }

  const HttpRequest& request_;
  tcp::resolver resolver_;
  Stream& stream_;
  std::string text_;
  std::string answer_;
  std::array<char, 4096> chunk_{};
};

template <>
void Exchange<tcp::socket>::handshake() {
  send();
}

using TlsStream = asio::ssl::stream<tcp::socket>;

template <>
void Exchange<TlsStream>::handshake() {
  step = "in the TLS handshake";
  // The name the certificate must be for, sent as SNI and checked against the certificate once
  // it chained to a trusted CA.
  setTlsServerName(stream_.native_handle(), request_.url.endpoint.host);
  stream_.set_verify_callback(asio::ssl::host_name_verification(request_.url.endpoint.host));
  stream_.async_handshake(asio::ssl::stream_base::client,
                          [this](const boost::system::error_code& ec) {
                            if (ec) return fail("TLS handshake: " + ec.message());
                            send();
                          });
}

template <typename Stream>
Result<std::string> run(asio::io_context& io, const HttpRequest& request, Stream& stream) {
  Exchange<Stream> exchange(io, request, stream);
  exchange.start();
  const auto deadline = std::chrono::steady_clock::now() + request.timeout;
  while (!exchange.outcome && std::chrono::steady_clock::now() < deadline) {
    if (io.run_one_until(deadline) == 0) break;
  }
  if (exchange.outcome) return std::move(*exchange.outcome);
  const std::string step = exchange.step;
  exchange.cancel();
  // The cancelled handlers still run, on this thread, before the exchange goes.
  io.restart();
  io.run();
  return makeError(ErrorCode::kIo,
                   "timed out after " + std::to_string(request.timeout.count()) + " ms " + step);
}

}  // namespace

void setTlsServerName(ssl_st* ssl, const std::string& host) {
  SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(host.c_str()));
}

bool httpResponseComplete(std::string_view text) {
  const auto end = text.find("\r\n\r\n");
  if (end == std::string_view::npos) return false;
  const std::string headers = lowerCase(text.substr(0, end + 2));
  const auto body = text.size() - (end + 4);
  const auto length = headers.find("\r\ncontent-length:");
  if (length != std::string::npos) {
    const auto p = headers.find_first_not_of(' ', length + 17);
    if (p == std::string::npos) return false;
    std::size_t n = 0;
    const auto [ptr, ec] = std::from_chars(headers.data() + p, headers.data() + headers.size(), n);
    return ec == std::errc() && body >= n;
  }
  if (headers.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    return text.ends_with("0\r\n\r\n");
  }
  // Neither: the body ends when the server closes (Connection: close was asked for).
  return false;
}

int httpStatus(std::string_view text) {
  const auto line = text.substr(0, text.find("\r\n"));
  int status = 0;
  if (!line.starts_with("HTTP/") || line.size() < 12 ||
      std::from_chars(line.data() + 9, line.data() + 12, status).ec != std::errc()) {
    return 0;
  }
  return status;
}

std::string httpBody(std::string_view text) {
  const auto end = text.find("\r\n\r\n");
  if (end == std::string_view::npos) return {};
  auto body = text.substr(end + 4);
  if (lowerCase(text.substr(0, end + 2)).find("\r\ntransfer-encoding: chunked") ==
      std::string::npos) {
    return std::string(body);
  }
  std::string out;
  while (!body.empty()) {
    std::size_t size = 0;
    const auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), size, 16);
    const auto line_end = body.find("\r\n");
    if (ec != std::errc() || size == 0 || line_end == std::string_view::npos) break;
    body.remove_prefix(line_end + 2);
    out.append(body.substr(0, size));
    body.remove_prefix(std::min(body.size(), size + 2));
  }
  return out;
}

Result<HttpResponse> httpExchange(const HttpRequest& request) {
  asio::io_context io;
  Result<std::string> answer = std::string();
  if (request.url.tls) {
    asio::ssl::context tls(asio::ssl::context::tls_client);
    if (request.ca_file.empty()) {
      if (auto failed = trustSystemCas(tls)) {
        return makeError(ErrorCode::kIo, "cannot load the system's CA certificates: " + *failed);
      }
    } else {
      boost::system::error_code ec;
      tls.load_verify_file(request.ca_file, ec);
      if (ec) {
        return makeError(ErrorCode::kIo, "cannot load the CA certificates of " + request.ca_file +
                                             ": " + ec.message());
      }
    }
    tls.set_verify_mode(asio::ssl::verify_peer);
    TlsStream stream(io, tls);
    answer = run(io, request, stream);
  } else {
    tcp::socket socket(io);
    answer = run(io, request, socket);
  }
  if (!answer) return answer.error();
  return HttpResponse{httpStatus(*answer), httpBody(*answer)};
}

}  // namespace wctmon
