#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/connection_front.h"
#include "api/health_service.h"
#include "api/monitor_service.h"
#include "api/reflection_service.h"
#include "api/tokens.h"
#include "core/config.h"
#include "model/result.h"

namespace grpc {
class Server;
}

namespace wctmon::api {

/// The gRPC server of wctmond: wctmon.v1.Monitor, the standard grpc.health.v1.Health (serving
/// while the scheduler is healthy; api/health_service.h) and server reflection (v1 and
/// v1alpha), on every address of `api.listen`.
/// Unix sockets get mode 0660, group api.group when it exists (their directory is made when
/// missing), and beside each a file naming its token files for clients; TCP listeners use TLS
/// when a certificate and key are configured, and require client certificates when a client CA
/// is. Requests are limited to 64 KiB, responses to 64 MiB.
class ApiServer {
 public:
  struct Dependencies {
    Monitor& monitor;
    /// The open incidents and their feed.
    IncidentEffects& incidents;
    TargetRegistry& targets;
    OnDemandAnalysis& analysis;
    IncidentRepository* store;
    ServiceControl& control;
    Executor work;
  };

  /// Reads the tokens (making missing token files), binds every address and starts serving.
  /// An address that cannot be bound, or TLS files that cannot be read, fail the start with a
  /// message naming them.
  [[nodiscard]] static Result<std::unique_ptr<ApiServer>> start(
      const Config::Api& config, const std::filesystem::path& state_dir, Dependencies deps);

  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  /// What health checks answer: SERVING or NOT_SERVING.
  void setServing(bool serving);
  /// Stops taking calls and ends those in flight (streams included) by `deadline`.
  void stop(std::chrono::milliseconds deadline);

  /// Where it listens, as configured ("127.0.0.1:7787", "unix:/run/wctmon/api.sock"), with the
  /// port a ":0" address was given.
  [[nodiscard]] const std::vector<std::string>& listening() const { return listening_; }
  [[nodiscard]] std::size_t watchers() const { return service_->watchers(); }
  [[nodiscard]] std::size_t healthWatchers() const { return health_->watches(); }
  /// The connections of the API's own listeners (none where gRPC listens itself).
  [[nodiscard]] ConnectionFront::Counts connections() const {
    return front_ ? front_->counts() : ConnectionFront::Counts{};
  }

 private:
  ApiServer() = default;

  std::unique_ptr<Tokens> tokens_;
  std::unique_ptr<MonitorService> service_;
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<ReflectionService> reflection_;
  std::unique_ptr<ConnectionFront> front_;  // declared before server_: outlives it
  std::unique_ptr<grpc::Server> server_;
  std::mutex serving_mutex_;  // setServing() against stop()'s release of server_
  std::vector<std::string> listening_;
  std::vector<std::filesystem::path> sockets_;
};

}  // namespace wctmon::api
