#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>

#include "support/temp_dir.h"

namespace wctmon::testing {

/// `wctmon run` with its API on a Unix socket in a temporary directory and on 127.0.0.1 at a
/// port of the system's choosing, watching the fixtures started with its tag (a `cmdline`
/// target sampled every 300 ms, hangs after 1 s); metrics on a port of the system's choosing;
/// killed when destroyed.
class ApiService {
 public:
  /// `api_extra`: more keys of the api section (`"watch_queue": 2, `); `extra`: more sections
  /// (`"capture": {"dump": "none"}, `; alerts are off unless it has an `"alerts"` section);
  /// `target_extra`: more keys of the fixtures' target (`"probe": {...}, `).
  explicit ApiService(const std::string& api_extra = "", const std::string& extra = "",
                      const std::string& target_extra = "");
  ~ApiService();
  ApiService(const ApiService&) = delete;
  ApiService& operator=(const ApiService&) = delete;

  /// SIGTERM, as systemd stops it: how long it took to exit, and its wait status.
  std::pair<std::chrono::milliseconds, int> terminate();
  /// Starts it again after terminate(), with the same configuration, state and socket (a new
  /// TCP port).
  void start();

  [[nodiscard]] const TempDir& dir() const { return dir_; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::string socket() const { return (dir_ / "api.sock").string(); }
  [[nodiscard]] std::string unixTarget() const { return "unix:" + socket(); }
  /// "127.0.0.1:PORT", or empty when the log did not say the port.
  [[nodiscard]] const std::string& tcpTarget() const { return tcp_; }
  /// Where the metrics are served ("127.0.0.1:PORT"), or empty when the log did not say.
  [[nodiscard]] const std::string& metricsAddress() const { return metrics_; }
  [[nodiscard]] std::string log() const { return (dir_ / "service.log").string(); }
  [[nodiscard]] std::filesystem::path stateDir() const { return dir_ / "state"; }
  [[nodiscard]] std::string adminToken() const {
    return (dir_ / "state" / "api-admin.token").string();
  }
  [[nodiscard]] std::string readerToken() const {
    return (dir_ / "state" / "api-reader.token").string();
  }
  /// The argument that makes a fixture one of this service's ("--tag=...").
  [[nodiscard]] const std::string& tag() const { return tag_; }

 private:
  TempDir dir_{"api"};
  std::string tag_;
  std::string tcp_;
  std::string metrics_;
  pid_t pid_ = -1;
};

}  // namespace wctmon::testing
