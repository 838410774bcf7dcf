#include "api/monitor_service.h"

#include <google/protobuf/util/time_util.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>

#include "api/grpc_errors.h"
#include "api/requests.h"
#include "wire/json_writer.h"
#include "wire/proto_convert.h"
#include "wire/utf8.h"

namespace wctmon::api {
namespace {

using google::protobuf::util::TimeUtil;

google::protobuf::Duration duration(std::chrono::microseconds d) {
  return TimeUtil::MicrosecondsToDuration(d.count());
}

v1::ProbeStatus toProto(const TargetProbeStatus& s) {
  v1::ProbeStatus out;
  out.set_probe(wire::validUtf8(s.probe));
  out.set_state(s.status.state);
  out.set_failures_in_a_row(s.status.failures_in_a_row);
  out.set_passed(s.status.passed);
  out.set_failed(s.status.failed);
  if (s.status.last) {
    *out.mutable_last_latency() = duration(s.status.last->latency);
    out.set_last_detail(wire::validUtf8(s.status.last->detail));
  }
  return out;
}

v1::Target toProto(const TargetConfig& t, bool runtime) {
  v1::Target out;
  out.set_name(wire::validUtf8(t.name));
  if (t.exe) out.set_exe(wire::validUtf8(*t.exe));
  if (t.cmdline) out.set_cmdline(wire::validUtf8(*t.cmdline));
  if (t.pid) out.set_pid(t.pid->value);
  if (t.all) out.set_all(true);
  out.set_interval_ms(static_cast<std::uint32_t>(t.interval.count()));
  out.set_hang_threshold_ms(static_cast<std::uint32_t>(t.hang_threshold.count()));
  out.set_out_of_proc(t.out_of_proc);
  out.mutable_wct()->set_com(t.wct.com);
  out.mutable_wct()->set_critical_sections(t.wct.critical_sections);
  out.mutable_wct()->set_network_io(t.wct.network_io);
  out.set_capture(t.capture);
  for (const auto type : t.ignore_waits) out.add_ignore_waits(waitTypeKey(type));
  out.set_origin(runtime ? v1::TARGET_ORIGIN_RUNTIME : v1::TARGET_ORIGIN_CONFIG);
  return out;
}

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

/// How an on-demand analysis is stopped when its caller goes away (its deadline passed, the call
/// cancelled, the connection lost), whichever comes first of the caller leaving and the analysis
/// starting. Shared, not part of the reactor: the analysis may answer, and the reactor be gone,
/// before the analysis is even known to have started.
class AnalysisCancel {
 public:
  void started(WaitChainAnalyzer::Cancel cancel) {
    bool left = false;
    {
      std::lock_guard lock(mutex_);
      cancel_ = cancel;
      left = caller_left_;
    }
    if (left) cancel();
  }

  void callerLeft() {
    WaitChainAnalyzer::Cancel cancel;
    {
      std::lock_guard lock(mutex_);
      caller_left_ = true;
      cancel = cancel_;
    }
    if (cancel) cancel();
  }

  /// Whether the caller went away.
  [[nodiscard]] bool left() {
    std::lock_guard lock(mutex_);
    return caller_left_;
  }

 private:
  std::mutex mutex_;
  bool caller_left_ = false;
  WaitChainAnalyzer::Cancel cancel_;
};

/// The reactor of one AnalyzeProcess: a caller who leaves cancels the analysis, so that nothing
/// is read further and no capture stops a target's threads for nobody.
class AnalysisReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit AnalysisReactor(std::shared_ptr<AnalysisCancel> cancel) : cancel_(std::move(cancel)) {}
  void OnCancel() override { cancel_->callerLeft(); }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<AnalysisCancel> cancel_;
};

}  // namespace

MonitorService::MonitorService(Dependencies deps) : deps_(std::move(deps)) {}

std::optional<grpc::Status> MonitorService::refusal(grpc::CallbackServerContext* context,
                                                    Role required,
                                                    const google::protobuf::Message& request) {
  auto status = tokenRefusal(context, required);
  if (!status) status = unreadableRequest(request);
  return status;
}

std::optional<grpc::Status> MonitorService::tokenRefusal(grpc::CallbackServerContext* context,
                                                         Role required) {
  const auto& metadata = context->client_metadata();
  std::optional<std::string_view> authorization;
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization = std::string_view(it->second.data(), it->second.size());
  }
  const auto why = deps_.tokens.check(authorization, required);
  if (why == Refusal::kNone) return std::nullopt;
  // At most one line per interval, with the count of the others: a client that keeps trying
  // cannot fill the log. The token presented is never written.
  if (const auto others = refusal_log_.admit()) {
    spdlog::warn(
        "API call from {} refused: {}{}", peerName(*context),
        why == Refusal::kPermissionDenied ? "reader token on an admin call" : "no valid token",
        LogThrottle::heldBack(*others, "more refused since the last such line"));
  }
  return refusalStatus(why, required);
}

std::string MonitorService::peerName(const grpc::CallbackServerContext& context) const {
  auto peer = context.peer();
  return deps_.peer_name ? deps_.peer_name(peer) : peer;
}

grpc::ServerUnaryReactor* MonitorService::refuse(grpc::CallbackServerContext* context,
                                                 Role required,
                                                 const google::protobuf::Message& request) {
  auto status = refusal(context, required, request);
  if (!status) return nullptr;
  auto* reactor = context->DefaultReactor();
  reactor->Finish(*status);
  return reactor;
}

grpc::ServerUnaryReactor* MonitorService::onPool(grpc::CallbackServerContext* context,
                                                 std::function<grpc::Status()> body) {
  auto* reactor = context->DefaultReactor();
  deps_.work([reactor, body = std::move(body)] { reactor->Finish(body()); });
  return reactor;
}

grpc::ServerUnaryReactor* MonitorService::GetStatus(grpc::CallbackServerContext* context,
                                                    const v1::GetStatusRequest* request,
                                                    v1::ServiceStatus* response) {
  if (auto* refused = refuse(context, Role::kReader, *request)) return refused;
  const auto facts = deps_.control.facts();
  const auto stats = deps_.monitor.stats();
  response->set_version(facts.version);
  response->set_platform(facts.platform);
  *response->mutable_started_at() = wire::toTimestamp(facts.started_at);
  *response->mutable_uptime() = duration(std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now() - facts.started_at));
  auto* source = response->mutable_source();
  source->set_name(facts.source);
  source->set_available(facts.source_available);
  source->set_reason(facts.source_reason);
  auto* alerts = response->mutable_alerts();
  alerts->set_configured(facts.alerts_configured);
  alerts->set_route(facts.alerts_route);
  alerts->set_delivers(facts.alerts_deliver);
  for (const auto& s : facts.alert_sinks) {
    auto* sink = alerts->add_sinks();
    sink->set_name(s.name);
    sink->set_delivered(s.delivered);
    sink->set_failed(s.failed);
    sink->set_dropped(s.dropped);
    sink->set_retried(s.retried);
    sink->set_queued(static_cast<std::uint32_t>(s.queued));
    sink->set_last_error(wire::validUtf8(s.last_error));
  }
  response->set_targets(static_cast<std::uint32_t>(stats.targets));
  response->set_watched_processes(static_cast<std::uint32_t>(stats.watched));
  response->set_watched_threads(stats.watched_threads);
  response->set_samples(stats.samples);
  response->set_samples_skipped(facts.samples_skipped);
  response->set_samples_overdue(facts.samples_overdue);
  response->set_sample_errors(stats.sample_errors);
  *response->mutable_last_sample_duration() = duration(facts.last_sample);
  *response->mutable_p99_sample_duration() = duration(facts.p99_sample);
  std::array<std::uint64_t, kIncidentKindCount> open{};
  for (const auto& incident : *deps_.incidents.openIncidents()) {
    ++open[static_cast<std::size_t>(incident.kind)];
  }
  for (const auto kind : kIncidentKinds) {
    auto* count = response->add_open_incidents();
    count->set_kind(wire::toProto(kind));
    count->set_count(open[static_cast<std::size_t>(kind)]);
  }
  response->set_incidents_opened(stats.incidents_opened);
  response->set_incidents_resolved(stats.incidents_resolved);
  response->set_api_watchers(static_cast<std::uint32_t>(watchers_.count()));
  response->set_healthy(facts.healthy);
  for (const auto& key : facts.restart_needed) response->add_restart_needed(key);
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* MonitorService::ListTargets(grpc::CallbackServerContext* context,
                                                      const v1::ListTargetsRequest* request,
                                                      v1::ListTargetsResponse* response) {
  if (auto* refused = refuse(context, Role::kReader, *request)) return refused;
  const auto runtime = deps_.targets.runtime();
  for (const auto& t : deps_.targets.all()) {
    const bool added = std::any_of(runtime.begin(), runtime.end(),
                                   [&](const TargetConfig& r) { return r.name == t.name; });
    *response->add_targets() = toProto(t, added);
  }
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* MonitorService::AddTarget(grpc::CallbackServerContext* context,
                                                    const v1::AddTargetRequest* request,
                                                    v1::Target* response) {
  if (auto* refused = refuse(context, Role::kAdmin, *request)) return refused;
  return onPool(context, [this, target = request->target(), response] {
    auto parsed = targetOf(target, deps_.monitor.config());
    if (!parsed) return toGrpcStatus(parsed.error());
    if (auto added = deps_.targets.add(*parsed); !added) {
      return toGrpcStatus(added.error());
    }
    spdlog::info("target \"{}\" added through the API", parsed->name);
    *response = toProto(*parsed, true);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* MonitorService::RemoveTarget(grpc::CallbackServerContext* context,
                                                       const v1::RemoveTargetRequest* request,
                                                       v1::RemoveTargetResponse* /*response*/) {
  if (auto* refused = refuse(context, Role::kAdmin, *request)) return refused;
  return onPool(context, [this, name = request->name()] {
    auto removed = deps_.targets.remove(name);
    if (!removed) return toGrpcStatus(removed.error());
    if (!*removed) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "no runtime target named \"" + wire::validUtf8(name) +
                              "\" (targets of the configuration file are changed there)");
    }
    spdlog::info("target \"{}\" removed through the API", name);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* MonitorService::AnalyzeProcess(grpc::CallbackServerContext* context,
                                                         const v1::AnalyzeProcessRequest* request,
                                                         v1::AnalyzeResult* response) {
  if (auto* refused = refuse(context, Role::kAdmin, *request)) return refused;
  auto asked = analysisOf(*request);
  if (!asked) {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(toGrpcStatus(asked.error()));
    return reactor;
  }
  auto cancel = std::make_shared<AnalysisCancel>();
  auto* call = new AnalysisReactor(cancel);  // deletes itself when done
  const auto pid = asked->pid.value;
  cancel->started(deps_.analysis.asyncAnalyze(
      asked->pid, std::move(asked->options), deps_.work,
      [call, response, pid](Result<Analysis> analysis) {
        if (!analysis) {
          if (analysis.error().code == ErrorCode::kCancelled) {
            spdlog::info("on-demand analysis of pid {} stopped: its caller went away", pid);
          }
          call->Finish(toGrpcStatus(analysis.error()));
          return;
        }
        *response = wire::toProto(analysis->result);
        call->Finish(grpc::Status::OK);
      }));
  return call;
}

grpc::ServerUnaryReactor* MonitorService::DumpProcess(grpc::CallbackServerContext* context,
                                                      const v1::DumpProcessRequest* request,
                                                      v1::Dump* response) {
  if (auto* refused = refuse(context, Role::kAdmin, *request)) return refused;
  if (request->pid() <= 0) {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(
        invalid("pid must be a process id above 0 (got " + std::to_string(request->pid()) + ")"));
    return reactor;
  }
  // The analysis first, while the process is as it hangs: carried inside the dump. A process
  // whose waits cannot be read is still dumped, the diagnosis saying why.
  auto cancel = std::make_shared<AnalysisCancel>();
  auto* call = new AnalysisReactor(cancel);  // deletes itself when done
  const Pid pid{request->pid()};
  cancel->started(deps_.analysis.asyncAnalyze(
      pid, AnalyzeOptions{}, deps_.work,
      [call, response, pid, cancel, work = deps_.work,
       &incidents = deps_.incidents](Result<Analysis> analysis) {
        if (!analysis && (analysis.error().code == ErrorCode::kNoSuchProcess ||
                          analysis.error().code == ErrorCode::kCancelled)) {
          call->Finish(toGrpcStatus(analysis.error()));
          return;
        }
        auto diagnosis = analysis ? wire::analysisToJson(analysis->result)
                                  : wire::analysisErrorToJson(analysis.error().message);
        // Seconds of reading memory: on the pool, not on the analysis's strand.
        work([call, response, pid, cancel, &incidents, diagnosis = std::move(diagnosis)]() mutable {
          if (cancel->left()) {
            call->Finish(toGrpcStatus(makeError(ErrorCode::kCancelled, "the caller went away")));
            return;
          }
          auto written = incidents.dumpNow(pid, std::move(diagnosis));
          if (!written) {
            call->Finish(toGrpcStatus(written.error()));
            return;
          }
          spdlog::info("dump of pid {} written on request: {} ({} bytes)", pid.value, written->path,
                       written->bytes);
          *response = wire::toProto(*written);
          call->Finish(grpc::Status::OK);
        });
      }));
  return call;
}

grpc::ServerUnaryReactor* MonitorService::ListProcesses(grpc::CallbackServerContext* context,
                                                        const v1::ListProcessesRequest* request,
                                                        v1::ListProcessesResponse* response) {
  if (auto* refused = refuse(context, Role::kReader, *request)) return refused;
  const auto probes = deps_.control.probes();
  for (const auto& w : deps_.monitor.watched()) {
    auto* p = response->add_processes();
    p->set_pid(w.process.identity.pid.value);
    p->set_start_time(w.process.identity.start_time);
    if (w.process.started_at) *p->mutable_started_at() = wire::toTimestamp(*w.process.started_at);
    p->set_name(wire::validUtf8(w.process.comm));
    p->set_target(wire::validUtf8(w.target->name));
    if (w.last_sample) {
      p->set_threads(w.last_sample->threads);
      *p->mutable_last_sample_at() = wire::toTimestamp(w.last_sample->at);
      p->set_state(wire::validUtf8(w.last_sample->state));
    } else {
      p->set_state("not sampled yet");
    }
    const auto probe = std::find_if(probes.begin(), probes.end(), [&](const TargetProbeStatus& s) {
      return s.target == w.target->name;
    });
    if (probe != probes.end()) *p->mutable_probe() = toProto(*probe);
  }
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* MonitorService::ListIncidents(grpc::CallbackServerContext* context,
                                                        const v1::ListIncidentsRequest* request,
                                                        v1::ListIncidentsResponse* response) {
  if (auto* refused = refuse(context, Role::kReader, *request)) return refused;
  auto* reactor = context->DefaultReactor();
  auto asked = incidentPageOf(*request);
  if (!asked) {
    reactor->Finish(toGrpcStatus(asked.error()));
    return reactor;
  }
  const auto page = asked->size;
  deps_.work([this, reactor, response, query = std::move(asked->query), page] {
    std::vector<Incident> incidents;
    if (deps_.store != nullptr) {
      auto listed = deps_.store->list(query);
      if (!listed) {
        reactor->Finish(toGrpcStatus(listed.error()));
        return;
      }
      if (!listed->warning.empty()) spdlog::warn("{}", listed->warning);
      incidents = std::move(listed->incidents);
    } else {
      for (const auto& i : *deps_.incidents.openIncidents()) {
        if (query.matches(i)) incidents.push_back(i);
      }
    }
    const bool more = incidents.size() > static_cast<std::size_t>(page);
    if (more) incidents.resize(static_cast<std::size_t>(page));
    for (auto& incident : incidents) {
      // The list is for finding incidents: their chains and evidence come with GetIncident.
      incident.chains.clear();
      incident.evidence.clear();
      *response->add_incidents() = wire::toProto(incident);
    }
    if (more) response->set_next_page_token(pageToken(incidents.back()));
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* MonitorService::GetIncident(grpc::CallbackServerContext* context,
                                                      const v1::GetIncidentRequest* request,
                                                      v1::Incident* response) {
  if (auto* refused = refuse(context, Role::kReader, *request)) return refused;
  return onPool(context, [this, id = request->id(), response] {
    std::optional<Incident> found;
    if (deps_.store != nullptr) {
      auto got = deps_.store->get(id);
      if (!got) return toGrpcStatus(got.error());
      found = std::move(*got);
    } else {
      for (const auto& i : *deps_.incidents.openIncidents()) {
        if (i.id == id) found = i;
      }
    }
    if (!found) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no incident " + std::to_string(id));
    }
    *response = wire::toProto(*found);
    return grpc::Status::OK;
  });
}

grpc::ServerWriteReactor<v1::IncidentEvent>* MonitorService::WatchIncidents(
    grpc::CallbackServerContext* context, const v1::WatchIncidentsRequest* request) {
  /// A call that ends before its first write.
  class Refused final : public grpc::ServerWriteReactor<v1::IncidentEvent> {
   public:
    explicit Refused(const grpc::Status& status) { Finish(status); }
    void OnDone() override { delete this; }
  };
  if (auto status = refusal(context, Role::kReader, *request)) return new Refused(*status);
  auto* watch = watchers_.start(deps_.incidents.feed(), deps_.watch_queue, deps_.work);
  if (watch == nullptr) {
    return new Refused(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the service is stopping"));
  }
  return watch;
}

grpc::ServerUnaryReactor* MonitorService::ReloadConfig(grpc::CallbackServerContext* context,
                                                       const v1::ReloadConfigRequest* request,
                                                       v1::ReloadConfigResponse* response) {
  if (auto* refused = refuse(context, Role::kAdmin, *request)) return refused;
  return onPool(context, [this, response] {
    const auto outcome = deps_.control.reload();
    if (!outcome.errors.empty()) {
      std::string message = "the configuration file was refused, the running one is kept:";
      for (const auto& e : outcome.errors) message += "\n" + e;
      return invalid(message);
    }
    for (const auto& key : outcome.applied) response->add_applied(key);
    for (const auto& key : outcome.needs_restart) response->add_needs_restart(key);
    for (const auto& [key, why] : outcome.failed) (*response->mutable_failed())[key] = why;
    return grpc::Status::OK;
  });
}

}  // namespace wctmon::api
