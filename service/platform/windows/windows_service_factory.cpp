#include <spdlog/spdlog.h>

#include "platform/service_factory.h"
#include "platform/windows/event_log_alert_sink.h"
#include "platform/windows/privileges.h"
#include "platform/windows/scm_service.h"
#include "platform/windows/scm_status_source.h"
#include "platform/windows/service_config.h"
#include "platform/windows/window_prober.h"
#include "platform/windows/windows_process_catalog.h"

namespace wctmon {
namespace {

/// In the foreground (not started by the SCM), as on Linux without systemd: nobody to tell about
/// readiness, reloads or stops.
class ForegroundServiceHost final : public ServiceHost {
 public:
  void ready(const std::string& /*status*/) override {}
  void status(const std::string& /*status*/) override {}
  void reloading() override {}
  void stopping() override {}
  void watchdog() override {}
  std::optional<std::chrono::microseconds> watchdogInterval() override { return std::nullopt; }
};

}  // namespace

std::unique_ptr<ProcessCatalog> makeProcessCatalog() {
  return std::make_unique<windows_platform::WindowsProcessCatalog>();
}

std::unique_ptr<ServiceStatusSource> makeServiceStatusSource() {
  return std::make_unique<windows_platform::ScmStatusSource>();
}

std::unique_ptr<WindowProber> makeWindowProber() {
  return std::make_unique<windows_platform::WindowsWindowProber>();
}

std::unique_ptr<SystemAlertSink> makeAlertSink() {
  return std::make_unique<windows_platform::EventLogAlertSink>();
}

void prepareServiceProcess() {
  // Without SeDebugPrivilege, processes of other accounts cannot be opened: their threads read
  // as NoAccess. Not fatal, said once.
  const auto privilege = windows_platform::enableDebugPrivilege();
  if (!privilege.enabled) spdlog::warn("SeDebugPrivilege not enabled: {}", privilege.why_not);
}

std::unique_ptr<ServiceHost> makeServiceHost() { return std::make_unique<ForegroundServiceHost>(); }

std::optional<int> runUnderServiceManager(const ServiceLifecycle& lifecycle) {
  return windows_platform::runUnderScm(lifecycle);
}

Result<std::vector<std::string>> configureServiceManager(const std::filesystem::path& state_dir) {
  return windows_platform::configureService(state_dir);
}

Status removeServiceManagerConfig(const std::filesystem::path& state_dir, bool purge) {
  return windows_platform::removeServiceConfig(state_dir, purge);
}

}  // namespace wctmon
