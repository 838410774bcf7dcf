#include "platform/windows/scm_service.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>
#include <utility>

#include "platform/windows/event_log_alert_sink.h"

namespace wctmon::windows_platform {
namespace {

constexpr DWORD kRunningControls = SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN |
                                   SERVICE_ACCEPT_PRESHUTDOWN | SERVICE_ACCEPT_PARAMCHANGE;

DWORD millis(std::chrono::milliseconds d) { return static_cast<DWORD>(d.count()); }

/// Moves the pending state's checkpoint every second while it lives (a start or a stop in
/// progress), so that the SCM sees the service alive however long the step takes.
class PendingTicker {
 public:
  explicit PendingTicker(ScmStatus& status)
      : thread_([this, &status] {
          std::unique_lock lock(mutex_);
          while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
            status.progress();
          }
        }) {}
  ~PendingTicker() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  PendingTicker(const PendingTicker&) = delete;
  PendingTicker& operator=(const PendingTicker&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members it uses are made
};

/// What the service's life is told under the SCM, and the controls that reached it.
struct ScmRun {
  const ServiceLifecycle* lifecycle = nullptr;
  /// Set once the handler is registered; read by the handler's thread too.
  std::atomic<SERVICE_STATUS_HANDLE> handle{nullptr};
  std::unique_ptr<ScmStatus> status;
  /// When a sample was last healthy (steady clock, ns): the watchdog of ServiceHost.
  std::atomic<std::int64_t> fed{0};

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<ControlDecision> requests;

  int exit_code = 0;
};

ScmRun* current_run = nullptr;  // ServiceMain takes no context of its own

std::int64_t steadyNow() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

/// The ServiceHost of a service under the SCM: readiness and stops become SERVICE_STATUS; the
/// watchdog is kept for the service's loop, which stops a service that stays unhealthy.
class ScmServiceHost final : public ServiceHost {
 public:
  explicit ScmServiceHost(ScmRun& run) : run_(run) {}
  void ready(const std::string& /*status*/) override {
    run_.fed = steadyNow();
    run_.status->running();
  }
  // The SCM has no status line; `sc query` shows the state, the API the rest.
  void status(const std::string& /*status*/) override {}
  void reloading() override {}
  void stopping() override { run_.status->stopPending(); }
  void watchdog() override { run_.fed = steadyNow(); }
  std::optional<std::chrono::microseconds> watchdogInterval() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(kWatchdogInterval);
  }

 private:
  ScmRun& run_;
};

/// The Event Log entry of a service that could not run: under the SCM there is no console, and
/// the service's own log may not exist yet.
void reportFailure(const std::string& reason) {
  EventLogAlertSink sink;
  (void)sink.route(AlertSinkKind::kEventLog);
  Alert alert;
  alert.kind = AlertKind::kServiceFailed;
  alert.severity = AlertSeverity::kError;
  alert.message = "wctmon service failed: " + reason;
  alert.fields = {{"REASON", reason}};
  (void)sink.send(alert);
}

DWORD WINAPI controlHandler(DWORD control, DWORD /*type*/, LPVOID /*data*/, LPVOID context) {
  auto& run = *static_cast<ScmRun*>(context);
  auto decision = decideControl(*run.status, control);
  const DWORD result = decision.result;
  if (decision.request != ControlRequest::kNone) {
    {
      std::lock_guard lock(run.mutex);
      run.requests.push_back(std::move(decision));
    }
    run.wake.notify_one();
  }
  return result;
}

/// Runs the service until a control stops it or it stays unhealthy; returns the
/// service-specific exit code (0 for a requested stop).
DWORD serve(ScmRun& run) {
  std::string reason;
  DWORD exit = 0;
  for (;;) {
    std::unique_lock lock(run.mutex);
    run.wake.wait_for(lock, std::chrono::seconds(1), [&] { return !run.requests.empty(); });
    if (!run.requests.empty()) {
      auto request = std::move(run.requests.front());
      run.requests.pop_front();
      lock.unlock();
      if (request.request == ControlRequest::kStop) {
        reason = std::move(request.reason);
        break;
      }
      run.lifecycle->reload();
      continue;
    }
    lock.unlock();
    const auto quiet = std::chrono::steady_clock::duration(steadyNow() - run.fed.load());
    if (quiet > kWatchdogInterval) {
      reason = "unhealthy: no sample succeeded for " +
               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(quiet).count()) +
               " s (every sampling worker stuck)";
      reportFailure(reason);
      exit = static_cast<DWORD>(ServiceExit::kUnhealthy);
      break;
    }
  }
  run.status->stopPending();
  {
    PendingTicker ticker(*run.status);
    run.lifecycle->stop(reason);
  }
  return exit;
}

void WINAPI serviceMain(DWORD /*argc*/, LPWSTR* /*argv*/) {
  ScmRun& run = *current_run;
  // Made before the handler is registered: the SCM may call it at once (INTERROGATE).
  run.status = std::make_unique<ScmStatus>([&run](const SERVICE_STATUS& s) {
    const SERVICE_STATUS_HANDLE handle = run.handle;
    if (handle == nullptr) return;
    SERVICE_STATUS copy = s;
    ::SetServiceStatus(handle, &copy);
  });
  run.handle = ::RegisterServiceCtrlHandlerExW(kServiceName, controlHandler, &run);
  if (run.handle == nullptr) {
    run.exit_code = 1;
    return;
  }
  run.status->startPending();
  Status started = std::monostate{};
  {
    PendingTicker ticker(*run.status);
    started = run.lifecycle->start(std::make_unique<ScmServiceHost>(run));
  }
  if (!started) {
    reportFailure(started.error().message);
    run.exit_code = static_cast<int>(ServiceExit::kStartFailed);
    run.status->stopped(ERROR_SERVICE_SPECIFIC_ERROR, run.exit_code);
    return;
  }
  const DWORD exit = serve(run);
  run.exit_code = static_cast<int>(exit);
  if (exit == 0) {
    run.status->stopped();
  } else {
    run.status->stopped(ERROR_SERVICE_SPECIFIC_ERROR, exit);
  }
}

}  // namespace

ScmStatus::ScmStatus(Report report) : report_(std::move(report)) {
  status_.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
  status_.dwCurrentState = SERVICE_STOPPED;
}

void ScmStatus::startPending() {
  std::lock_guard lock(mutex_);
  enterLocked(SERVICE_START_PENDING, 0, 1, millis(kStartWaitHint));
}

void ScmStatus::running() {
  std::lock_guard lock(mutex_);
  // Only a start ends in RUNNING: a reload's readiness while stopping changes nothing.
  if (status_.dwCurrentState != SERVICE_START_PENDING) return;
  enterLocked(SERVICE_RUNNING, kRunningControls, 0, 0);
}

void ScmStatus::stopPending() {
  std::lock_guard lock(mutex_);
  if (status_.dwCurrentState == SERVICE_STOP_PENDING || status_.dwCurrentState == SERVICE_STOPPED) {
    return;
  }
  enterLocked(SERVICE_STOP_PENDING, 0, 1, millis(kStopWaitHint));
}

void ScmStatus::progress() {
  std::lock_guard lock(mutex_);
  if (status_.dwCurrentState != SERVICE_START_PENDING &&
      status_.dwCurrentState != SERVICE_STOP_PENDING) {
    return;
  }
  ++status_.dwCheckPoint;
  reportLocked();
}

void ScmStatus::stopped(DWORD win32_exit, DWORD service_exit) {
  std::lock_guard lock(mutex_);
  status_.dwWin32ExitCode = win32_exit;
  status_.dwServiceSpecificExitCode = service_exit;
  enterLocked(SERVICE_STOPPED, 0, 0, 0);
}

void ScmStatus::interrogate() {
  std::lock_guard lock(mutex_);
  reportLocked();
}

SERVICE_STATUS ScmStatus::current() const {
  std::lock_guard lock(mutex_);
  return status_;
}

void ScmStatus::enterLocked(DWORD state, DWORD controls, DWORD checkpoint, DWORD wait_hint) {
  status_.dwCurrentState = state;
  status_.dwControlsAccepted = controls;
  status_.dwCheckPoint = checkpoint;
  status_.dwWaitHint = wait_hint;
  reportLocked();
}

void ScmStatus::reportLocked() { report_(status_); }

ControlDecision decideControl(ScmStatus& status, DWORD control) {
  const DWORD state = status.current().dwCurrentState;
  const bool live = state == SERVICE_START_PENDING || state == SERVICE_RUNNING;
  ControlDecision d;
  switch (control) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
    case SERVICE_CONTROL_PRESHUTDOWN:
      if (!live) return d;  // already stopping: the stop under way answers it
      // STOP_PENDING at once, before the service's thread picks the request up: the SCM reads
      // the state the handler leaves.
      status.stopPending();
      d.request = ControlRequest::kStop;
      d.reason = control == SERVICE_CONTROL_STOP ? "the service control manager asked it to stop"
                                                 : "the system is shutting down";
      return d;
    case SERVICE_CONTROL_PARAMCHANGE:
      if (state != SERVICE_RUNNING) {
        d.result = ERROR_SERVICE_CANNOT_ACCEPT_CTRL;
        return d;
      }
      d.request = ControlRequest::kReload;
      return d;
    case SERVICE_CONTROL_INTERROGATE:
      status.interrogate();
      return d;
    default:
      d.result = ERROR_CALL_NOT_IMPLEMENTED;
      return d;
  }
}

std::optional<int> runUnderScm(const ServiceLifecycle& lifecycle) {
  ScmRun run;
  run.lifecycle = &lifecycle;
  current_run = &run;
  std::wstring name(kServiceName);
  SERVICE_TABLE_ENTRYW table[] = {{name.data(), serviceMain}, {nullptr, nullptr}};
  const BOOL dispatched = ::StartServiceCtrlDispatcherW(table);
  const DWORD error = ::GetLastError();
  current_run = nullptr;
  if (dispatched == FALSE) {
    if (error == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) return std::nullopt;
    return 1;
  }
  return run.exit_code;
}

}  // namespace wctmon::windows_platform
