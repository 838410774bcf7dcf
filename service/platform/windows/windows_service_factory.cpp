#include <spdlog/spdlog.h>

#include "platform/service_factory.h"
#include "platform/windows/privileges.h"
#include "platform/windows/windows_process_catalog.h"

namespace wctmon {
namespace {

/// Until the service runs under the SCM it runs in the foreground, as on Linux without systemd:
/// nobody to tell about readiness, reloads or stops.
class ForegroundServiceHost final : public ServiceHost {
 public:
  void ready(const std::string& /*status*/) override {}
  void status(const std::string& /*status*/) override {}
  void reloading() override {}
  void stopping() override {}
  void watchdog() override {}
  std::optional<std::chrono::microseconds> watchdogInterval() override { return std::nullopt; }
};

/// journald and syslog do not exist on Windows, whose system log is the Event Log: alerts asked
/// for are said not to be delivered rather than dropped silently.
class UndeliveredAlertSink final : public SystemAlertSink {
 public:
  AlertRoute route(AlertSinkKind kind) override {
    if (kind == AlertSinkKind::kNone) return {"alerts are off (alerts.sink is \"none\")", true};
    return {"alerts are not delivered: this Windows build has no Event Log sink yet", false};
  }
  void send(const Alert& /*alert*/) override {}
};

}  // namespace

std::unique_ptr<ProcessCatalog> makeProcessCatalog() {
  return std::make_unique<windows_platform::WindowsProcessCatalog>();
}

std::unique_ptr<SystemAlertSink> makeAlertSink() {
  return std::make_unique<UndeliveredAlertSink>();
}

void prepareServiceProcess() {
  // Without SeDebugPrivilege, processes of other accounts cannot be opened: their threads read
  // as NoAccess. Not fatal, said once.
  const auto privilege = windows_platform::enableDebugPrivilege();
  if (!privilege.enabled) spdlog::warn("SeDebugPrivilege not enabled: {}", privilege.why_not);
}

std::unique_ptr<ServiceHost> makeServiceHost() { return std::make_unique<ForegroundServiceHost>(); }

}  // namespace wctmon
