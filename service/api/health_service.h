#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#include "grpc/health/v1/health.grpc.pb.h"
#pragma GCC diagnostic pop

namespace wctmon::api {

using HealthStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

class HealthWatch;

/// The standard health service (grpc.health.v1.Health), answered by the API itself rather than
/// by gRPC's default one, whose descriptors reflection cannot find and which takes any name it
/// was once asked to watch for a service of its own.
///
/// The names it knows are fixed at construction ("" for the whole server, and the API's
/// services): SERVING or NOT_SERVING as setServing() says. Any other name is unknown for ever:
/// Check answers NOT_FOUND, Watch sends SERVICE_UNKNOWN once and nothing after. Watch sends the
/// status when the call begins and then only when it changes. It needs no token, so the Watch
/// calls open at once are capped: past the cap, RESOURCE_EXHAUSTED.
class HealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  HealthService(std::set<std::string> names, std::size_t max_watches);
  ~HealthService() override;
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  /// The status of every known name; the Watch calls on them hear of it if it changed.
  void setServing(bool serving);
  /// Ends every Watch call with UNAVAILABLE and refuses new ones: the server is stopping (its
  /// shutdown would otherwise wait for them).
  void endAll();
  /// Watch calls in progress.
  [[nodiscard]] std::size_t watches() const;

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::health::v1::HealthCheckResponse* response) override;
  grpc::ServerWriteReactor<grpc::health::v1::HealthCheckResponse>* Watch(
      grpc::CallbackServerContext* context,
      const grpc::health::v1::HealthCheckRequest* request) override;

 private:
  friend class HealthWatch;
  void remove(HealthWatch* watch);

  const std::set<std::string> names_;
  const std::size_t max_watches_;
  mutable std::mutex mutex_;
  HealthStatus status_ = grpc::health::v1::HealthCheckResponse::NOT_SERVING;
  std::map<HealthWatch*, std::shared_ptr<HealthWatch>> watches_;
  bool closed_ = false;
};

}  // namespace wctmon::api
