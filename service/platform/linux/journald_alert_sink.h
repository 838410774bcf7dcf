#pragma once

#include "core/alert.h"

namespace wctmon::linux_platform {

/// Alerts as structured journal entries (MESSAGE_ID, PRIORITY, WCTMON_* fields).
class JournaldAlertSink final : public AlertSink {
 public:
  void send(const Alert& alert) override;
};

/// Alerts as syslog lines, for systems without journald.
class SyslogAlertSink final : public AlertSink {
 public:
  SyslogAlertSink();
  ~SyslogAlertSink() override;
  SyslogAlertSink(const SyslogAlertSink&) = delete;
  SyslogAlertSink& operator=(const SyslogAlertSink&) = delete;
  void send(const Alert& alert) override;
};

/// Whether journald is there to take entries (its socket exists).
[[nodiscard]] bool journaldAvailable();

}  // namespace wctmon::linux_platform
