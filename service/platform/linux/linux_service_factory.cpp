#include "platform/linux/journald_alert_sink.h"
#include "platform/linux/linux_process_catalog.h"
#include "platform/linux/systemd_service_host.h"
#include "platform/service_factory.h"

namespace wctmon {

std::unique_ptr<ProcessCatalog> makeProcessCatalog() {
  return std::make_unique<linux_platform::LinuxProcessCatalog>();
}

std::unique_ptr<AlertSink> makeAlertSink(AlertSinkKind kind) {
  switch (kind) {
    case AlertSinkKind::kNone:
      return nullptr;
    case AlertSinkKind::kJournald:
      if (linux_platform::journaldAvailable())
        return std::make_unique<linux_platform::JournaldAlertSink>();
      return std::make_unique<linux_platform::SyslogAlertSink>();
    case AlertSinkKind::kSyslog:
      return std::make_unique<linux_platform::SyslogAlertSink>();
  }
  return nullptr;
}

std::unique_ptr<ServiceHost> makeServiceHost() {
  return std::make_unique<linux_platform::SystemdServiceHost>();
}

}  // namespace wctmon
