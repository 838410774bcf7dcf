// A target's liveness probe, as the configuration writes it (`targets[].probe`): how the service
// asks from outside whether the target's process still answers, and how many answers make a
// verdict.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.h"

namespace wctmon {

/// A host and a port: "127.0.0.1:8080", "localhost:80", "[::1]:50051".
struct Endpoint {
  std::string host;  // without brackets
  int port = 0;
  /// "host:port", an IPv6 address in brackets: "[::1]:50051".
  [[nodiscard]] std::string text() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// "HOST:PORT" parsed; an error saying what is wrong otherwise.
[[nodiscard]] Result<Endpoint> parseEndpoint(std::string_view text);

/// An http or https URL, parsed.
struct HttpUrl {
  bool tls = false;
  Endpoint endpoint;
  /// "/" when the URL has none; with its query.
  std::string target = "/";
  friend bool operator==(const HttpUrl&, const HttpUrl&) = default;
};

/// "http://HOST[:PORT][/PATH]" or "https://…" parsed; an error saying what is wrong otherwise.
[[nodiscard]] Result<HttpUrl> parseHttpUrl(std::string_view text);

/// One target's liveness probe.
struct ProbeConfig {
  enum class Type { kTcp, kHttp, kGrpcHealth, kUnix, kExec };
  Type type = Type::kTcp;
  /// tcp and grpc_health: where to connect.
  Endpoint endpoint;
  /// http: what to GET.
  HttpUrl url;
  /// unix: the socket's path.
  std::string path;
  /// exec: the program and its arguments, or (`shell`) one command line for the shell (sh -c,
  /// cmd /c), as the configuration gave a string.
  std::vector<std::string> command;
  bool shell = false;
  /// grpc_health: the service asked about; empty asks about the server as a whole.
  std::string service;
  /// http: the status that passes, and text the body must hold (empty: any body).
  int status = 200;
  std::string body_contains;
  std::chrono::milliseconds interval{5000};
  /// Each probe's own deadline; a probe past it failed.
  std::chrono::milliseconds timeout{2000};
  /// Failures in a row before the target is declared unresponsive, and successes in a row before
  /// it answers again.
  unsigned failures = 3;
  unsigned successes = 1;

  /// What the probe asks, for logs and incidents: "http://127.0.0.1:8080/", "tcp 10.0.0.1:5432",
  /// "exec /usr/local/bin/check".
  [[nodiscard]] std::string describe() const;

  friend bool operator==(const ProbeConfig&, const ProbeConfig&) = default;
};

/// The type's name in the configuration: "tcp", "http", "grpc_health", "unix", "exec".
[[nodiscard]] std::string_view probeTypeName(ProbeConfig::Type type);

}  // namespace wctmon
