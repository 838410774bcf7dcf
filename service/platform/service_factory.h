#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/ports/alert_sink.h"
#include "core/ports/hot_spot_sampler.h"
#include "core/ports/prober.h"
#include "core/ports/process_catalog.h"
#include "core/ports/service_host.h"
#include "core/ports/service_status_source.h"
#include "core/ports/window_prober.h"
#include "model/result.h"

namespace wctmon {

/// The process catalog of this platform.
[[nodiscard]] std::unique_ptr<ProcessCatalog> makeProcessCatalog();

/// The probes of this platform that are not network probes: Unix socket connects, commands.
[[nodiscard]] std::unique_ptr<LocalProber> makeLocalProber();

/// Where a busy thread's frames are sampled (Linux: without stopping it; Windows: holding it for
/// one register read per sample); none where the platform cannot (busy threads are then not
/// looked for).
[[nodiscard]] std::unique_ptr<HotSpotSampler> makeHotSpotSampler();

/// The status of this system's services, for the watch of services stuck pending (Windows: the
/// service control manager); nullptr where no service manager has pending states to watch
/// (Linux: systemd's units are not watched this way).
[[nodiscard]] std::unique_ptr<ServiceStatusSource> makeServiceStatusSource();

/// Probes the top-level windows of processes, for the watch of windows that stop answering
/// (Windows); nullptr where there is no window system to probe (Linux).
[[nodiscard]] std::unique_ptr<WindowProber> makeWindowProber();

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

/// The supervisor interface of this platform, for a service run in the foreground (systemd's
/// notifications on Linux; nobody to tell on Windows outside the SCM).
[[nodiscard]] std::unique_ptr<ServiceHost> makeServiceHost();

/// The service's life as a service manager drives it.
struct ServiceLifecycle {
  /// Builds and starts the service, which tells `host` how it goes; the error when it cannot.
  std::function<Status(std::unique_ptr<ServiceHost> host)> start;
  std::function<void()> reload;
  /// Stops it, `reason` first in its log.
  std::function<void(const std::string& reason)> stop;
};

/// Runs the service under this platform's service manager when that manager started this
/// process, and returns the process's exit code once it has stopped; nullopt otherwise, for the
/// caller to run it in the foreground. On Windows: the SCM. On Linux always nullopt: systemd
/// runs services in the foreground and speaks to them through makeServiceHost()'s notifications.
[[nodiscard]] std::optional<int> runUnderServiceManager(const ServiceLifecycle& lifecycle);

/// Applies to the installed service what its installer cannot (Windows: failure actions, delayed
/// start, service SID, required privileges, preshutdown timeout, the event source, the state
/// directory's access list; see platform/windows/service_config.h); idempotent. Returns the
/// settings the system does not know, applied as far as it goes. On Linux the systemd unit
/// carries all of it: an error says so.
[[nodiscard]] Result<std::vector<std::string>> configureServiceManager(
    const std::filesystem::path& state_dir);
/// Undoes what removing the service leaves (Windows: the event source), and with `purge` the
/// state directory; idempotent. On Linux an error, as above.
[[nodiscard]] Status removeServiceManagerConfig(const std::filesystem::path& state_dir, bool purge);

}  // namespace wctmon
