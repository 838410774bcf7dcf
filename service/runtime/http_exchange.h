// One HTTP(S) request and its answer, for the alert sinks that post to receivers (Alertmanager,
// web hooks): blocking the calling thread (a sink's own thread in the alert router), held to a
// deadline, on a private Asio context so that a receiver that stops answering holds nothing of
// the service's.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/probe_config.h"
#include "model/result.h"

struct ssl_st;

namespace wctmon {

/// Sends `host` as the TLS server name (SNI) of the connection `ssl` is about to make: what
/// SSL_set_tlsext_host_name does, without the macro's C cast.
void setTlsServerName(ssl_st* ssl, const std::string& host);

struct HttpRequest {
  std::string method = "POST";
  HttpUrl url;
  /// Extra header lines beyond Host, Content-Type, Content-Length, Connection and User-Agent.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "application/json";
  std::string body;
  /// https: the PEM file of the CA certificates the receiver's certificate must chain to; empty:
  /// the system's (OpenSSL's default paths). The certificate must also name the URL's host.
  std::string ca_file;
  /// The whole exchange: resolve, connect, handshake, request and answer.
  std::chrono::milliseconds timeout{5000};
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

/// Sends `request` and reads the answer, whatever its status. An error with ErrorCode::kIo when
/// no answer came (cannot resolve or connect, TLS refused, timed out, closed early).
[[nodiscard]] Result<HttpResponse> httpExchange(const HttpRequest& request);

/// Whether `text` holds an HTTP answer whole: its headers and the body its Content-Length or its
/// chunked encoding announces. An answer with neither ends when the server closes.
[[nodiscard]] bool httpResponseComplete(std::string_view text);

/// The status code of an HTTP answer's first line ("HTTP/1.1 200 OK"), or 0 when it is not one.
[[nodiscard]] int httpStatus(std::string_view text);

/// The body of an HTTP answer, its chunked encoding undone; empty when it has none.
[[nodiscard]] std::string httpBody(std::string_view text);

}  // namespace wctmon
