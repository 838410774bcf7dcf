#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/alert_router.h"
#include "core/probe_tracker.h"

namespace wctmon::api {

/// What the API reports of the service that runs it, beyond the monitor's own counters.
struct ServiceFacts {
  std::string version;
  std::string platform;
  std::chrono::system_clock::time_point started_at;
  /// The wait-chain source: its name, whether it works here and, if not or not fully, why.
  std::string source;
  bool source_available = true;
  std::string source_reason;
  /// The configured alert sink, where alerts go now, and whether they are delivered.
  std::string alerts_configured;
  std::string alerts_route;
  bool alerts_deliver = false;
  /// What each alert sink did so far.
  std::vector<AlertRouter::SinkStats> alert_sinks;
  std::uint64_t samples_skipped = 0;
  std::uint64_t samples_overdue = 0;
  std::chrono::microseconds last_sample{0};
  std::chrono::microseconds p99_sample{0};
  bool healthy = true;
  /// Configuration keys changed in the file that wait for a restart.
  std::vector<std::string> restart_needed;
};

/// What ReloadConfig did (see app::ReloadReport).
struct ReloadOutcome {
  std::vector<std::string> errors;
  std::vector<std::string> applied;
  std::vector<std::string> needs_restart;
  std::map<std::string, std::string> failed;
};

/// The service as the API sees it: its facts, and a reload. Implemented by the service shell.
class ServiceControl {
 public:
  virtual ~ServiceControl() = default;
  [[nodiscard]] virtual ServiceFacts facts() const = 0;
  /// The targets' liveness probes as their last outcomes left them.
  [[nodiscard]] virtual std::vector<TargetProbeStatus> probes() const = 0;
  /// Reads the configuration file again, as SIGHUP does.
  [[nodiscard]] virtual ReloadOutcome reload() = 0;
};

}  // namespace wctmon::api
