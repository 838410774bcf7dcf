#pragma once

#include <string>
#include <utility>
#include <vector>

namespace wctmon {

/// What an alert is about; each kind has a stable message id in the system log.
enum class AlertKind {
  kDeadlockDetected,
  kHangDetected,
  kIncidentResolved,
  kServiceStarted,
  kServiceStopped,
  kConfigError,
};

enum class AlertSeverity { kInfo, kWarning, kError, kCritical };

/// One alert: a line for people and fields for machines (PID, PROCESS, THREADS, ...).
struct Alert {
  AlertKind kind = AlertKind::kServiceStarted;
  AlertSeverity severity = AlertSeverity::kInfo;
  std::string message;
  /// Extra structured fields, upper-case names as journald wants them.
  std::vector<std::pair<std::string, std::string>> fields;
  /// The target the alert is about (rate limiting); empty for service alerts.
  std::string target;
};

/// The stable 128-bit id (32 hex digits) of each alert kind, as journald's MESSAGE_ID.
[[nodiscard]] const char* messageId(AlertKind kind);

/// Where alerts go: journald or syslog on Linux, the Event Log on Windows. Called from one
/// thread at a time.
class AlertSink {
 public:
  virtual ~AlertSink() = default;
  virtual void send(const Alert& alert) = 0;
};

}  // namespace wctmon
