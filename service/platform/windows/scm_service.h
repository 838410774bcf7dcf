#pragma once

#include <windows.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "platform/service_factory.h"

namespace wctmon::windows_platform {

/// The service's name in the SCM (sc query WctMon).
inline constexpr const wchar_t* kServiceName = L"WctMon";

/// Service-specific exit codes (SERVICE_STATUS.dwServiceSpecificExitCode, with
/// dwWin32ExitCode = ERROR_SERVICE_SPECIFIC_ERROR), as `sc query WctMon` shows them after a
/// failure. The SCM's failure actions restart the service after each (wctmond
/// --configure-service sets them for non-crash failures too).
enum class ServiceExit : DWORD {
  kStartFailed = 1,  ///< the configuration, the state directory, the store or the API
  kUnhealthy = 2,    ///< no healthy sample for the watchdog interval: every worker stuck
};

/// How long each pending state may take between two checkpoints: the SCM takes a service
/// whose checkpoint does not move within its wait hint for hung. The service moves it every
/// second while it starts or stops, and says honestly how long a step can take: a start opens
/// the store and binds the API (well under a second, seconds on a slow disk); a stop ends the
/// API's calls (up to 1 s) and lets samples and their side effects finish (up to 3 s).
inline constexpr std::chrono::milliseconds kStartWaitHint{10000};
inline constexpr std::chrono::milliseconds kStopWaitHint{5000};
/// How long the system waits for the service at shutdown before it goes on (PRESHUTDOWN;
/// wctmond --configure-service sets it): a stop takes at most about 4 s.
inline constexpr std::chrono::milliseconds kPreshutdownTimeout{15000};
/// The service is stopped as failed (kUnhealthy) when no sample was healthy for this long.
inline constexpr std::chrono::seconds kWatchdogInterval{60};

/// The SERVICE_STATUS the SCM is told, as the service's life goes: START_PENDING and
/// STOP_PENDING with a checkpoint that only grows, RUNNING accepting STOP, SHUTDOWN,
/// PRESHUTDOWN and PARAMCHANGE, STOPPED with an exit code. Each change is handed to `report`
/// (SetServiceStatus under the SCM; a recorder in tests). Thread-safe.
class ScmStatus {
 public:
  using Report = std::function<void(const SERVICE_STATUS&)>;
  explicit ScmStatus(Report report);

  void startPending();
  void running();
  /// STOP_PENDING (once: a second stop request while stopping changes nothing).
  void stopPending();
  /// The next checkpoint of the pending state; nothing in RUNNING or STOPPED.
  void progress();
  void stopped(DWORD win32_exit = NO_ERROR, DWORD service_exit = 0);
  /// Tells the SCM the current status again (INTERROGATE).
  void interrogate();

  [[nodiscard]] SERVICE_STATUS current() const;

 private:
  /// `state`, accepting `controls`, then reported.
  void enterLocked(DWORD state, DWORD controls, DWORD checkpoint, DWORD wait_hint);
  void reportLocked();

  Report report_;
  mutable std::mutex mutex_;
  SERVICE_STATUS status_{};
};

/// What a control asks of the service.
enum class ControlRequest { kNone, kStop, kReload };

/// The control handler's decisions, without the SCM: what `control` (SERVICE_CONTROL_*) does
/// to `status` and asks of the service, and the handler's return code. STOP, SHUTDOWN and
/// PRESHUTDOWN stop a starting or running service (STOP_PENDING at once); PARAMCHANGE reloads a
/// running one; INTERROGATE reports the status again; the rest is not implemented.
struct ControlDecision {
  ControlRequest request = ControlRequest::kNone;
  DWORD result = NO_ERROR;
  /// Why the service stops, for its log ("the SCM asked it to stop").
  std::string reason;
};
[[nodiscard]] ControlDecision decideControl(ScmStatus& status, DWORD control);

/// Runs the service under the SCM when the SCM started this process (StartServiceCtrlDispatcherW
/// connects), and returns the process's exit code when the service has stopped; nullopt when
/// the process was started otherwise, for the caller to run it in the foreground.
[[nodiscard]] std::optional<int> runUnderScm(const ServiceLifecycle& lifecycle);

}  // namespace wctmon::windows_platform
