#include "core/alert_rate_limiter.h"

namespace wctmon {

AlertKind openedAlertKind(IncidentKind kind) {
  switch (kind) {
    case IncidentKind::kDeadlock:
      return AlertKind::kDeadlockDetected;
    case IncidentKind::kHang:
      return AlertKind::kHangDetected;
    case IncidentKind::kUnresponsive:
      return AlertKind::kUnresponsiveDetected;
    case IncidentKind::kBusy:
      return AlertKind::kBusyDetected;
    case IncidentKind::kStall:
      return AlertKind::kStallDetected;
    case IncidentKind::kServiceHung:
      return AlertKind::kServiceHungDetected;
    case IncidentKind::kWindowHung:
      return AlertKind::kWindowHungDetected;
  }
  return AlertKind::kHangDetected;
}

AlertSeverity incidentSeverity(IncidentKind kind) {
  switch (kind) {
    case IncidentKind::kDeadlock:
      return AlertSeverity::kCritical;
    case IncidentKind::kBusy:
    case IncidentKind::kWindowHung:
      return AlertSeverity::kWarning;
    case IncidentKind::kHang:
    case IncidentKind::kUnresponsive:
    case IncidentKind::kStall:
    case IncidentKind::kServiceHung:
      break;
  }
  return AlertSeverity::kError;
}

const char* alertKindName(AlertKind kind) {
  switch (kind) {
    case AlertKind::kDeadlockDetected:
      return "deadlock_detected";
    case AlertKind::kHangDetected:
      return "hang_detected";
    case AlertKind::kUnresponsiveDetected:
      return "unresponsive_detected";
    case AlertKind::kBusyDetected:
      return "busy_detected";
    case AlertKind::kStallDetected:
      return "stall_detected";
    case AlertKind::kServiceHungDetected:
      return "service_hung_detected";
    case AlertKind::kWindowHungDetected:
      return "window_hung_detected";
    case AlertKind::kIncidentResolved:
      return "incident_resolved";
    case AlertKind::kServiceStarted:
      return "service_started";
    case AlertKind::kServiceStopped:
      return "service_stopped";
    case AlertKind::kServiceFailed:
      return "service_failed";
    case AlertKind::kConfigError:
      return "config_error";
    case AlertKind::kCaptureFailed:
      return "capture_failed";
    case AlertKind::kWaitChainSourceUnavailable:
      return "wait_chain_source_unavailable";
    case AlertKind::kStoreFault:
      return "store_fault";
    case AlertKind::kStoreRecovered:
      return "store_recovered";
  }
  return "unknown";
}

const char* severityName(AlertSeverity severity) {
  switch (severity) {
    case AlertSeverity::kCritical:
      return "critical";
    case AlertSeverity::kError:
      return "error";
    case AlertSeverity::kWarning:
      return "warning";
    case AlertSeverity::kInfo:
      break;
  }
  return "info";
}

const char* messageId(AlertKind kind) {
  switch (kind) {
    case AlertKind::kDeadlockDetected:
      return "c2519431cd9d4f02bf613503ae34abfb";
    case AlertKind::kHangDetected:
      return "3eea867526074cbfbfd8e8fc2f6a9b6a";
    case AlertKind::kUnresponsiveDetected:
      return "8ae129309ccf46f98ec523cbb448ae0b";
    case AlertKind::kBusyDetected:
      return "8a384042516c41488ff08d0978001962";
    case AlertKind::kStallDetected:
      return "b5c4352ff1464597a3c18739e245dc8a";
    case AlertKind::kServiceHungDetected:
      return "2e6fa307cb90433cb52df319a940ab6b";
    case AlertKind::kWindowHungDetected:
      return "b344da5490354f5990f822c04844c50e";
    case AlertKind::kIncidentResolved:
      return "28aaba1380694f57b6dc269a05976cf6";
    case AlertKind::kServiceStarted:
      return "5ce0be8b13114c75b1abfb9ee90a4e16";
    case AlertKind::kServiceStopped:
      return "db880371f45e4e49a46c38ea5049e2db";
    case AlertKind::kServiceFailed:
      return "e39b7d0c4a5f48c2b61e9a07d3c5f18b";
    case AlertKind::kConfigError:
      return "82613676a43f4554a6d0a2ef4b02c60b";
    case AlertKind::kCaptureFailed:
      return "0f6c3e9a2b7d4c51a8e4d29b6f1c07e3";
    case AlertKind::kWaitChainSourceUnavailable:
      return "7a41d2c95e0b4f8396c1b0e5d8a2f647";
    case AlertKind::kStoreFault:
      return "b3e1c7d24a6f4e0c9d58f2a71c4e6b90";
    case AlertKind::kStoreRecovered:
      return "4d92a6e0f1b34c7a8e25d0c6b9f3a715";
  }
  return "00000000000000000000000000000000";
}

bool AlertRateLimiter::admit(const Alert& alert) {
  if (alert.target.empty()) return true;
  const auto now = clock_.steadyNow();
  auto& w = windows_[alert.target];
  if (w.count == 0 || now - w.start >= window_) {
    w.start = now;
    w.count = 0;
  }
  if (w.count >= max_) {
    ++suppressed_;
    return false;
  }
  ++w.count;
  return true;
}

}  // namespace wctmon
