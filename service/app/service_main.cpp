// wctmond: the monitoring service, as `wctmon run --config FILE` starts it (in the foreground,
// under systemd or by hand) or the Windows SCM does, and the store reader behind `wctmon
// incidents`. This main only translates: the command line into a Service or the incidents
// command; the SCM's controls (runUnderServiceManager), or else SIGTERM/SIGINT, into
// Service::stop(), and PARAMCHANGE or SIGHUP into Service::reload(). On Windows in the
// foreground, Ctrl+C and Ctrl+Break stop it (a reload is asked through the API's ReloadConfig).
// --configure-service and --remove-service-config are the Windows installer's steps.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "app/incidents_command.h"
#include "app/man_pages.h"
#include "app/service.h"
#include "app/service_signals.h"
#include "cli/cli_args.h"
#include "cli/help_formatter.h"
#include "cli/man_page.h"
#include "core/config.h"
#include "platform/service_factory.h"

namespace {

namespace asio = boost::asio;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int run(const std::string& config_path) {
  // Under the SCM on Windows: its controls drive the service, and its status says how it goes.
  std::unique_ptr<wctmon::app::Service> managed;
  const wctmon::ServiceLifecycle lifecycle{
      .start = [&](std::unique_ptr<wctmon::ServiceHost> host) -> wctmon::Status {
        managed = std::make_unique<wctmon::app::Service>(std::move(host));
        return managed->start(config_path);
      },
      .reload = [&] { (void)managed->reload(); },  // the service logs what it did
      .stop = [&](const std::string& reason) { managed->stop(reason); },
  };
  if (const auto exit = wctmon::runUnderServiceManager(lifecycle)) return *exit;

  wctmon::app::Service service(wctmon::makeServiceHost());
  // Caught from before the start: a SIGTERM that comes while the service starts stops it once
  // started, rather than killing it half-way (a store being created, say).
  asio::io_context signals_io;
#ifdef _WIN32
  asio::signal_set signals(signals_io, SIGTERM, SIGINT, SIGBREAK);
  constexpr int kReloadSignal = -1;  // none: Windows has no SIGHUP
#else
  asio::signal_set signals(signals_io, SIGTERM, SIGINT, SIGHUP);
  constexpr int kReloadSignal = SIGHUP;
#endif
  // Handled from here on: those held since main (or since `wctmon run`) are delivered now.
  wctmon::app::releaseServiceSignals();
  if (auto started = service.start(config_path); !started) {
    std::istringstream lines(started.error().message);
    for (std::string line; std::getline(lines, line);) std::cerr << "wctmon: " << line << "\n";
    return kExitError;
  }
  int stop_signal = 0;
  // Reload signals that come together are one reload (a flood of SIGHUP is one reload and one
  // log line): it runs once no signal came for kReloadQuiet, or kReloadAtMost after the first.
  constexpr auto kReloadQuiet = std::chrono::milliseconds(250);
  constexpr auto kReloadAtMost = std::chrono::seconds(2);
  asio::steady_timer reload_timer(signals_io);
  std::optional<std::chrono::steady_clock::time_point> reload_asked;
  const auto scheduleReload = [&] {
    const auto now = std::chrono::steady_clock::now();
    if (!reload_asked) reload_asked = now;
    reload_timer.expires_after(std::min<std::chrono::steady_clock::duration>(
        kReloadQuiet, *reload_asked + kReloadAtMost - now));
    reload_timer.async_wait([&](const boost::system::error_code& error) {
      if (error) return;  // moved by a later signal, or the loop stopped
      reload_asked.reset();
      (void)service.reload();  // the service logs what it applied and what it refused
    });
  };
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& error, int signal) {
        if (error) return;
        if (signal == kReloadSignal) {
          scheduleReload();
          signals.async_wait(on_signal);
          return;
        }
        stop_signal = signal;
        signals_io.stop();
      };
  signals.async_wait(on_signal);
  signals_io.run();
  service.stop("signal " + std::to_string(stop_signal));
  return kExitOk;
}

/// The state directory the configuration at `config_path` names, or the platform's default
/// without one.
wctmon::Result<std::filesystem::path> stateDirOf(const std::string& config_path) {
  if (config_path.empty()) return wctmon::platformDefaults().state_dir;
  auto parsed = wctmon::loadConfig(config_path);
  if (!parsed) {
    return wctmon::makeError(wctmon::ErrorCode::kInvalidArgument,
                             parsed.error().front().describe(config_path));
  }
  return parsed->state_dir;
}

int configureService(const std::string& config_path, bool remove, bool purge) {
  const auto found = stateDirOf(config_path);
  if (!found) {
    std::cerr << "wctmon: " << found.error().message << "\n";
    return kExitError;
  }
  const auto& state_dir = *found;
  if (remove) {
    if (auto removed = wctmon::removeServiceManagerConfig(state_dir, purge); !removed) {
      std::cerr << "wctmon: " << removed.error().message << "\n";
      return kExitError;
    }
    std::cout << "service configuration removed" << (purge ? ", the state directory too" : "")
              << "\n";
    return kExitOk;
  }
  const auto configured = wctmon::configureServiceManager(state_dir);
  if (!configured) {
    std::cerr << "wctmon: " << configured.error().message << "\n";
    return kExitError;
  }
  for (const auto& setting : *configured) {
    std::cerr << "wctmon: warning: this system does not know the service's " << setting
              << ": not set\n";
  }
  std::cout << "service configured (state directory " << state_dir.string() << ")\n";
  return kExitOk;
}

}  // namespace

namespace {

int commandMain(int argc, char** argv) {
  // Before anything else: a stop or a reload that comes while the service starts is handled once
  // it runs, never the default action that ends the process (see service_signals.h).
  wctmon::app::holdServiceSignals();
  CLI::App app{"wctmond: the wctmon monitoring service"};
  // Before the commands: each takes its parent's formatter when made.
  const auto help = wctmon::cli::useHelpFormatter(app);
  std::string config_path;
  app.add_option("--config,-c", config_path, "Configuration file")->type_name("FILE");
  wctmon::app::IncidentsArgs incidents_args;
  auto* incidents = app.add_subcommand(
      "incidents", "List recorded incidents from the store, or show one whole with --id");
  wctmon::app::addIncidentsOptions(*incidents, incidents_args);
  bool configure = false;
  bool remove = false;
  bool purge = false;
  auto* configure_flag = app.add_flag(
      "--configure-service", configure,
      "Apply to the installed Windows service what its installer cannot (failure actions, "
      "delayed start, privileges, event source, state directory access); idempotent");
  auto* remove_flag =
      app.add_flag("--remove-service-config", remove,
                   "Undo what removing the Windows service leaves (the event source registration)");
  app.add_flag("--purge", purge,
               "With --remove-service-config: remove the state directory too (configuration, "
               "incidents, tokens)")
      ->needs(remove_flag);
  configure_flag->excludes(remove_flag);
  // Hidden: the man page wctmond(8) in roff, for the build (installer/linux).
  std::string man_date;
  auto* man = app.add_subcommand("__man", "The man page wctmond(8), in roff");
  man->group("");
  man->add_option("--date", man_date, "The date of the release")->type_name("DATE");
  help->setExamples(&app, {{"wctmond --config /etc/wctmon/wctmon.json",
                            "the service in the foreground (as wctmon run starts it)"}});
  help->setExamples(incidents, {{"wctmond incidents -c /etc/wctmon/wctmon.json --state open --json",
                                 "the open incidents from the store, as JSON"}});
  if (const auto exit = wctmon::cli::parseCommandLine(app, argc, argv, "wctmon", "wctmond")) {
    return *exit;
  }
  if (man->parsed()) {
    std::cout << wctmon::cli::manPage(app, *help, wctmon::app::wctmondManPage(man_date));
    return kExitOk;
  }
  if (incidents->parsed() || configure || remove) wctmon::app::releaseServiceSignals();
  if (configure || remove) {
    try {
      return configureService(config_path, remove, purge);
    } catch (const std::exception& e) {
      std::cerr << "wctmon: " << e.what() << "\n";
      return kExitError;
    }
  }
  if (!incidents->parsed() && config_path.empty()) {
    std::cerr << "wctmon: wctmond needs --config FILE, or the incidents command\n";
    return kExitUsage;
  }
  try {
    if (incidents->parsed()) return wctmon::app::runIncidents(incidents_args);
    return run(config_path);
  } catch (const std::exception& e) {
    std::cerr << "wctmon: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace

int main(int argc, char** argv) {
  return wctmon::cli::checkedOutput(commandMain(argc, argv), "wctmon");
}
