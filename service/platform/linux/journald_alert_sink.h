#pragma once

#include <mutex>
#include <optional>

#include "core/ports/alert_sink.h"
#include "platform/service_factory.h"

namespace wctmon::linux_platform {

/// Where journald takes structured entries (sd_journal_sendv).
inline constexpr const char* kJournaldSocket = "/run/systemd/journal/socket";
/// Where syslog(3) sends its lines.
inline constexpr const char* kSyslogSocket = "/dev/log";

/// Alerts as structured journal entries (MESSAGE_ID, PRIORITY, WCTMON_* fields).
class JournaldAlertSink final : public AlertSink {
 public:
  Status send(const Alert& alert) override;
};

/// Alerts as syslog lines, for systems without journald.
class SyslogAlertSink final : public AlertSink {
 public:
  SyslogAlertSink();
  ~SyslogAlertSink() override;
  SyslogAlertSink(const SyslogAlertSink&) = delete;
  SyslogAlertSink& operator=(const SyslogAlertSink&) = delete;
  Status send(const Alert& alert) override;
};

/// Where alerts end up.
enum class AlertDestination { kJournald, kSyslog, kNowhere };

/// Where alerts for `wanted` go when journald and syslog are (or are not) listening: the log
/// asked for, else the other one, else nowhere.
[[nodiscard]] AlertDestination chooseAlertDestination(AlertSinkKind wanted, bool journald,
                                                      bool syslog);

/// Whether something receives datagrams on the Unix socket at `path` (a socket file whose
/// daemon died refuses the connection).
[[nodiscard]] bool socketListening(const char* path);

/// The service's alert sink: journald or syslog, whichever route() found listening.
class SystemLogAlertSink final : public SystemAlertSink {
 public:
  [[nodiscard]] AlertRoute route(AlertSinkKind kind) override;
  Status send(const Alert& alert) override;

 private:
  std::mutex mutex_;
  AlertDestination destination_ = AlertDestination::kNowhere;
  JournaldAlertSink journald_;
  std::optional<SyslogAlertSink> syslog_;  // openlog(3) only while syslog is the destination
};

}  // namespace wctmon::linux_platform
