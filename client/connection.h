#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "wctmon/v1/monitor.grpc.pb.h"

namespace wctmon::client {

/// Where the service answers, with what token, how long to wait: the global options.
struct ConnectionOptions {
  /// "unix:/path", "host:port", "[::1]:port"; empty: the local socket when it exists, else
  /// loopback (defaultServer).
  std::string server;
  /// Empty: the admin token file when readable, else the reader's, of the service on `server`
  /// (client/token_files.h).
  std::string token_file;
  /// Deadline of each call (streams have none).
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  bool tls = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string tls_server_name;
};

/// Why wctctl gives up: its exit status and one line, without the "wctctl: server: " prefix.
struct Failure {
  int exit_code = 1;
  std::string reason;
};

/// The token files' names in the service's state directory (client/defaults.h).
inline constexpr const char* kAdminTokenName = "api-admin.token";
inline constexpr const char* kReaderTokenName = "api-reader.token";

/// The server when none is given: the local socket when it exists, else loopback TCP.
[[nodiscard]] std::string defaultServer();

/// A channel to the service and the stubs on it, with the token each call carries.
class Connection {
 public:
  /// Resolves the defaults, reads the token and the TLS files; a Failure when one cannot be read.
  [[nodiscard]] static std::variant<std::unique_ptr<Connection>, Failure> open(
      ConnectionOptions options);

  /// The server as errors name it.
  [[nodiscard]] const std::string& server() const { return options_.server; }

  /// A context for one call: the token when there is one, and the deadline unless `streaming`.
  [[nodiscard]] std::unique_ptr<grpc::ClientContext> context(bool streaming = false) const;

  [[nodiscard]] v1::Monitor::Stub& monitor() { return *monitor_; }
  [[nodiscard]] grpc::health::v1::Health::Stub& health() { return *health_; }

  /// Whether the channel stands connected to the server.
  [[nodiscard]] bool connected() const;
  /// Tries to connect until it is connected, `deadline` passes or `stop` says so (asked every
  /// quarter of a second); whether it is connected.
  bool waitForConnection(std::chrono::steady_clock::time_point deadline,
                         const std::function<bool()>& stop);

  /// What a failed call means to the user: the exit status and the reason, the server's own
  /// words included.
  [[nodiscard]] Failure explain(const grpc::Status& status) const;

 private:
  explicit Connection(ConnectionOptions options) : options_(std::move(options)) {}

  ConnectionOptions options_;
  /// The token file read, and the token (empty when none could be found).
  std::string token_file_;
  std::string token_;
  /// The token files tried, none when the server's are unknown.
  std::vector<std::filesystem::path> token_candidates_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Monitor::Stub> monitor_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace wctmon::client
