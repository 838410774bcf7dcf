#include "platform/linux/journald_alert_sink.h"
#include "platform/linux/linux_process_catalog.h"
#include "platform/linux/systemd_service_host.h"
#include "platform/service_factory.h"

namespace wctmon {

std::unique_ptr<ProcessCatalog> makeProcessCatalog() {
  return std::make_unique<linux_platform::LinuxProcessCatalog>();
}

std::unique_ptr<SystemAlertSink> makeAlertSink() {
  return std::make_unique<linux_platform::SystemLogAlertSink>();
}

std::unique_ptr<ServiceHost> makeServiceHost() {
  return std::make_unique<linux_platform::SystemdServiceHost>();
}

}  // namespace wctmon
