#pragma once

#include <memory>
#include <string>

#include "core/config.h"
#include "core/ports/alert_sink.h"
#include "core/ports/process_catalog.h"
#include "core/ports/service_host.h"

namespace wctmon {

/// The process catalog of this platform.
[[nodiscard]] std::unique_ptr<ProcessCatalog> makeProcessCatalog();

/// Where alerts go on this machine, as chosen for `alerts.sink`.
struct AlertRoute {
  /// One line for the service log: "alerts go to journald (/run/systemd/journal/socket)".
  std::string description;
  /// False when alerts were asked for and nothing here takes them: the log says so as a warning.
  bool delivered = true;
};

/// The system log as an alert sink. Where it sends is chosen from what the machine offers when
/// the service starts and again at each reload (route()), so that no alert is lost silently.
class SystemAlertSink : public AlertSink {
 public:
  /// Chooses where alerts go for `kind` (the preferred log, else the other one) and says where.
  [[nodiscard]] virtual AlertRoute route(AlertSinkKind kind) = 0;
};

/// The alert sink of this platform; it sends nothing until route() chose where.
[[nodiscard]] std::unique_ptr<SystemAlertSink> makeAlertSink();

/// Prepares this process to run the service, before any platform piece is made (Linux: raises
/// the soft descriptor limit, from which the sampler takes its budget of kept-open descriptors).
void prepareServiceProcess();

/// The supervisor interface of this platform.
[[nodiscard]] std::unique_ptr<ServiceHost> makeServiceHost();

}  // namespace wctmon
