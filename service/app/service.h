#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/ports/service_host.h"
#include "model/result.h"

namespace wctmon::app {

/// What a reload did with the configuration file.
struct ReloadReport {
  /// The file could not be used (unreadable or invalid), one line per problem: nothing changed.
  std::vector<std::string> errors;
  /// Keys whose new value runs now (live keys; see config_keys.h).
  std::vector<std::string> applied;
  /// Keys changed in the file that keep their running value until the service restarts.
  std::vector<std::string> needs_restart;
  /// Live keys whose new value could not be applied (a log file that cannot be opened): they
  /// keep their running value.
  struct Failure {
    std::string key;
    std::string reason;
  };
  std::vector<Failure> failed;

  [[nodiscard]] bool refused() const { return !errors.empty(); }
};

/// Where the service is in its life.
enum class ServiceState { kStopped, kStarting, kRunning, kStopping };

/// The monitoring service, whatever supervises it: start, reload and stop, for the main of each
/// platform (systemd's signals on Linux, the SCM's controls on Windows) to call. It builds the
/// platform's pieces through the platform factories, opens the store under the state directory,
/// and runs the monitor on the scheduler's worker pool; it tells the supervisor (ServiceHost)
/// when it is ready, reloading and stopping, and feeds its watchdog from the scheduler's health
/// check.
///
/// start(), reload() and stop() are called from one thread at a time; state() and status()
/// from any thread.
///
/// Shutdown order (stop(), and the destructor of a running service):
///   1. the supervisor is told the service is stopping;
///   2. the scheduler stops: its timers are cancelled, running samples and the monitor's
///      pending side effects (captures, store writes, alerts) are drained within its grace
///      period, then the worker pool stops (Scheduler::stop);
///   3. the "service stopped" alert is sent and logged;
///   4. the monitor, the platform's pieces and the store are released (the store is closed);
///   5. logging is flushed and shut down, last, so that every step above can still log.
class Service {
 public:
  /// `host`: the supervisor interface (makeServiceHost() for this platform's).
  explicit Service(std::unique_ptr<ServiceHost> host);
  /// Stops the service when it still runs.
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Loads `config_path`, creates the state directory, sets up logging, opens the store (a
  /// damaged one is moved aside for a new one, with a log line and a store-fault alert) and
  /// starts monitoring; tells the supervisor it is ready. The error names what failed (each
  /// problem of an invalid file on its own line, "FILE: /pointer: reason"); nothing is left
  /// running then. An error too when the service already runs.
  [[nodiscard]] Status start(const std::filesystem::path& config_path);

  /// Reads the configuration file again and applies every changed key that can change live;
  /// each changed key that needs a restart keeps its running value and is named, as a warning
  /// in the log and in the supervisor's status line, until a reload finds it back at its
  /// running value. An invalid file changes nothing: the log says why and a config-error alert
  /// is raised. Does nothing (an empty report) when the service is not running.
  ReloadReport reload();

  /// Stops the service in the order documented above, logging `reason` ("signal 15") first;
  /// does nothing when it is not running.
  void stop(std::string_view reason = {});

  [[nodiscard]] ServiceState state() const;
  /// One line for the supervisor: what is watched, incidents, samples, and the keys waiting
  /// for a restart; or the state ("stopped") when not running.
  [[nodiscard]] std::string status() const;

 private:
  struct Running;
  class Control;

  /// `line`, with the keys waiting for a restart when there are any.
  [[nodiscard]] std::string withRestartNote(std::string line) const;

  std::unique_ptr<ServiceHost> host_;
  std::filesystem::path config_path_;

  mutable std::mutex mutex_;  // guards state_, restart_note_ and the pointer running_
  ServiceState state_ = ServiceState::kStopped;
  /// "restart needed for sampling.threads, state_dir", or empty, and those keys.
  std::string restart_note_;
  std::vector<std::string> restart_keys_;
  std::mutex reload_mutex_;  // one reload at a time (SIGHUP, the API)
  std::unique_ptr<Running> running_;
};

}  // namespace wctmon::app
