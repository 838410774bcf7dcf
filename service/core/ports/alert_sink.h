#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/incident.h"
#include "model/result.h"

namespace wctmon {

/// What an alert is about; each kind has a stable message id in the system log.
enum class AlertKind {
  kDeadlockDetected,
  kHangDetected,
  /// A liveness probe failed `failures` times in a row.
  kUnresponsiveDetected,
  /// A thread spins: a whole core for the threshold, in the same few functions.
  kBusyDetected,
  /// Every thread of a process blocked, nothing to wake them.
  kStallDetected,
  /// A Windows service stuck in a pending state past its wait hint.
  kServiceHungDetected,
  /// A window that stopped answering messages.
  kWindowHungDetected,
  kIncidentResolved,
  kServiceStarted,
  kServiceStopped,
  /// The service could not start, or stopped on a failure.
  kServiceFailed,
  kConfigError,
  /// The evidence of a deadlock could not be taken (no thread could be stopped or read).
  kCaptureFailed,
  /// The platform's wait chains cannot be read here (WCT missing, no privilege to read /proc).
  kWaitChainSourceUnavailable,
  /// The incident store failed: a damaged file moved aside at start, a file deleted or replaced
  /// while running made again, writes that cannot be done (a full disk; said once, not per
  /// incident). REASON: SQLite's words with the file.
  kStoreFault,
  /// The store takes writes again after a fault: what waited is written.
  kStoreRecovered,
};

enum class AlertSeverity { kInfo, kWarning, kError, kCritical };

/// One alert: a line for people and fields for machines. Incident alerts carry INCIDENT_ID,
/// INCIDENT_KIND, PID, PROCESS, PIDS, THREADS (and REASON when a capture failed); service alerts
/// VERSION and CONFIG (started), REASON (stopped, failed, config error, unavailable source, store
/// fault),
/// CONFIG (config error), SOURCE (unavailable source).
struct Alert {
  AlertKind kind = AlertKind::kServiceStarted;
  AlertSeverity severity = AlertSeverity::kInfo;
  std::string message;
  /// Extra structured fields, upper-case names as journald wants them.
  std::vector<std::pair<std::string, std::string>> fields;
  /// The target the alert is about (rate limiting); empty for service alerts.
  std::string target;
  /// The incident the alert is about, whole (the Event Log keeps it as the event's data); none
  /// for service alerts.
  std::shared_ptr<const Incident> incident;
};

/// The alert that says an incident of `kind` opened.
[[nodiscard]] AlertKind openedAlertKind(IncidentKind kind);

/// How grave an open incident of `kind` is: a deadlock never ends by itself (critical); a busy
/// thread or a window may still come back (warning); the other kinds are errors.
[[nodiscard]] AlertSeverity incidentSeverity(IncidentKind kind);

/// The name of an alert kind for machines: "deadlock_detected", "incident_resolved",
/// "store_fault" (web hooks' "event").
[[nodiscard]] const char* alertKindName(AlertKind kind);

/// "critical", "error", "warning", "info".
[[nodiscard]] const char* severityName(AlertSeverity severity);

/// The stable 128-bit id (32 hex digits) of each alert kind, as journald's MESSAGE_ID.
[[nodiscard]] const char* messageId(AlertKind kind);

/// Where alerts go: journald or syslog on Linux, the Event Log on Windows, and the router that
/// fans them out to those (AlertRouter). A sink behind the router is called by the router's
/// thread for that sink only, one alert at a time, and may block; the router's send() is called
/// from any thread and never blocks. Fails when the alert was not delivered (why, in a line);
/// ErrorCode::kIo says the receiver may take it later (it was down, did not answer, was busy),
/// and the router then retries for as long as the route allows.
class AlertSink {
 public:
  virtual ~AlertSink() = default;
  virtual Status send(const Alert& alert) = 0;
  /// How often refresh() wants to run while the sink is idle; zero: never. For receivers that
  /// forget a firing alert not sent again (Alertmanager).
  [[nodiscard]] virtual std::chrono::milliseconds refreshInterval() const {
    return std::chrono::milliseconds::zero();
  }
  /// Sends again what the receiver must keep hearing; called on the sink's thread between sends.
  virtual Status refresh() { return std::monostate{}; }
  /// The opening `alert` of an incident still open from before the service started, sent once
  /// at start. A receiver that keeps what fires only while it hears of it again (Alertmanager)
  /// takes it up, so that its alert lasts until the incident resolves; the others were told by
  /// the run before and are not told twice: nothing.
  virtual Status resume(const Alert& alert) {
    (void)alert;
    return std::monostate{};
  }
};

}  // namespace wctmon
