#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/result.h"

namespace wctmon {

/// Where a service is in its life, as the service control manager knows it.
enum class ServiceState {
  kStopped,
  kStartPending,
  kStopPending,
  kRunning,
  kContinuePending,
  kPausePending,
  kPaused,
};

/// "STOPPED", "START_PENDING", "RUNNING", ...: the names of the SERVICE_* states, as `sc query`
/// and operators spell them.
[[nodiscard]] constexpr const char* toString(ServiceState state) {
  switch (state) {
    case ServiceState::kStopped:
      return "STOPPED";
    case ServiceState::kStartPending:
      return "START_PENDING";
    case ServiceState::kStopPending:
      return "STOP_PENDING";
    case ServiceState::kRunning:
      return "RUNNING";
    case ServiceState::kContinuePending:
      return "CONTINUE_PENDING";
    case ServiceState::kPausePending:
      return "PAUSE_PENDING";
    case ServiceState::kPaused:
      return "PAUSED";
  }
  return "UNKNOWN";
}

/// A state the service must leave on its own, moving its checkpoint within its wait hint until
/// it has.
[[nodiscard]] constexpr bool isPending(ServiceState state) {
  return state == ServiceState::kStartPending || state == ServiceState::kStopPending ||
         state == ServiceState::kContinuePending || state == ServiceState::kPausePending;
}

/// One service's status at one reading.
struct ServiceReading {
  /// The key name (`sc query NAME`), unique without regard to case.
  std::string name;
  /// The name people see in the Services console.
  std::string display_name;
  /// The process that runs it; 0 when none does (stopped, or not started yet).
  Pid pid;
  ServiceState state = ServiceState::kStopped;
  /// The progress counter a pending service moves as it goes; 0 otherwise.
  std::uint32_t checkpoint = 0;
  /// How long the service said its current pending step may take before the checkpoint moves;
  /// 0 when it did not say.
  std::chrono::milliseconds wait_hint{0};

  friend bool operator==(const ServiceReading&, const ServiceReading&) = default;
};

/// Reads the status of the system's services (the SCM on Windows).
class ServiceStatusSource {
 public:
  virtual ~ServiceStatusSource() = default;
  /// Every service of its own process, whatever its state; an error when the source cannot be
  /// read at all (the SCM refused the connection).
  [[nodiscard]] virtual Result<std::vector<ServiceReading>> list() = 0;
};

}  // namespace wctmon
