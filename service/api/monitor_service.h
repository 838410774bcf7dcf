#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api/incident_watch.h"
#include "api/service_control.h"
#include "api/tokens.h"
#include "core/executor.h"
#include "core/log_throttle.h"
#include "core/monitor.h"
#include "core/on_demand_analysis.h"
#include "core/ports/incident_repository.h"
// The callback service below overrides each method's callback form, which hides the synchronous
// form of the same name that gRPC's generated base also declares: by design, not a mistake here.
// GCC reports it where the hidden method is declared, so the warning is off for that header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#include "wctmon/v1/monitor.grpc.pb.h"
#pragma GCC diagnostic pop

namespace wctmon::api {

/// The calls of wctmon.v1.Monitor on gRPC's callback API: thin adapters over the monitor, the
/// store and the service, after a check of the caller's token. Calls that may block (the store,
/// an analysis, a reload) run on the service's pool and finish from there; none runs on gRPC's
/// own threads longer than a lookup.
class MonitorService final : public v1::Monitor::CallbackService {
 public:
  struct Dependencies {
    Monitor& monitor;
    /// The open incidents and their feed.
    IncidentEffects& incidents;
    TargetRegistry& targets;
    OnDemandAnalysis& analysis;
    IncidentRepository* store;  // nullptr: the open incidents are all there is
    ServiceControl& control;
    const Tokens& tokens;
    /// Where blocking work runs (the service's pool).
    Executor work;
    /// Events queued for one WatchIncidents client before it is cut off (api.watch_queue).
    std::size_t watch_queue = 1024;
    /// Who a call comes from, for the log, from gRPC's name of its connection (the API's own
    /// listeners hand gRPC connections it can only name "fd:N"); empty: gRPC's name.
    std::function<std::string(const std::string& grpc_peer)> peer_name;
  };

  explicit MonitorService(Dependencies deps);

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::GetStatusRequest* request,
                                      v1::ServiceStatus* response) override;
  grpc::ServerUnaryReactor* ListTargets(grpc::CallbackServerContext* context,
                                        const v1::ListTargetsRequest* request,
                                        v1::ListTargetsResponse* response) override;
  grpc::ServerUnaryReactor* AddTarget(grpc::CallbackServerContext* context,
                                      const v1::AddTargetRequest* request,
                                      v1::Target* response) override;
  grpc::ServerUnaryReactor* RemoveTarget(grpc::CallbackServerContext* context,
                                         const v1::RemoveTargetRequest* request,
                                         v1::RemoveTargetResponse* response) override;
  grpc::ServerUnaryReactor* AnalyzeProcess(grpc::CallbackServerContext* context,
                                           const v1::AnalyzeProcessRequest* request,
                                           v1::AnalyzeResult* response) override;
  grpc::ServerUnaryReactor* DumpProcess(grpc::CallbackServerContext* context,
                                        const v1::DumpProcessRequest* request,
                                        v1::Dump* response) override;
  grpc::ServerUnaryReactor* ListProcesses(grpc::CallbackServerContext* context,
                                          const v1::ListProcessesRequest* request,
                                          v1::ListProcessesResponse* response) override;
  grpc::ServerUnaryReactor* ListIncidents(grpc::CallbackServerContext* context,
                                          const v1::ListIncidentsRequest* request,
                                          v1::ListIncidentsResponse* response) override;
  grpc::ServerUnaryReactor* GetIncident(grpc::CallbackServerContext* context,
                                        const v1::GetIncidentRequest* request,
                                        v1::Incident* response) override;
  grpc::ServerWriteReactor<v1::IncidentEvent>* WatchIncidents(
      grpc::CallbackServerContext* context, const v1::WatchIncidentsRequest* request) override;
  grpc::ServerUnaryReactor* ReloadConfig(grpc::CallbackServerContext* context,
                                         const v1::ReloadConfigRequest* request,
                                         v1::ReloadConfigResponse* response) override;

  /// Clients in WatchIncidents now.
  [[nodiscard]] std::size_t watchers() const { return watchers_.count(); }
  /// Ends every WatchIncidents call (UNAVAILABLE): the service is stopping.
  void endStreams() { watchers_.endAll(); }

 private:
  /// Why a call is refused: for its token (logged, rate-limited), or for a request that could
  /// not be read; or nothing.
  std::optional<grpc::Status> refusal(grpc::CallbackServerContext* context, Role required,
                                      const google::protobuf::Message& request);
  std::optional<grpc::Status> tokenRefusal(grpc::CallbackServerContext* context, Role required);
  /// The reactor of a unary call refused (refusal), or nullptr when the caller may go on.
  grpc::ServerUnaryReactor* refuse(grpc::CallbackServerContext* context, Role required,
                                   const google::protobuf::Message& request);
  /// Who made the call, for the log.
  [[nodiscard]] std::string peerName(const grpc::CallbackServerContext& context) const;
  /// Runs `body` on the pool and finishes the call with its status.
  grpc::ServerUnaryReactor* onPool(grpc::CallbackServerContext* context,
                                   std::function<grpc::Status()> body);

  /// Refused calls are logged at most once in this time.
  static constexpr std::chrono::seconds kRefusalLogInterval{10};

  Dependencies deps_;
  IncidentWatchers watchers_;
  LogThrottle refusal_log_{kRefusalLogInterval};
};

}  // namespace wctmon::api
