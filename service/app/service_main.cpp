// wctmond: the monitoring service, as `wctmon run --config FILE` starts it (in the foreground,
// under systemd or by hand), and the store reader behind `wctmon incidents`. This main only
// translates: the command line into a Service or the incidents command, SIGTERM/SIGINT into
// Service::stop(), SIGHUP into Service::reload(). On Windows, in the foreground, Ctrl+C and
// Ctrl+Break stop it (a reload is asked through the API's ReloadConfig).
#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <iostream>
#include <sstream>

#include "app/incidents_command.h"
#include "app/service.h"
#include "platform/service_factory.h"

namespace {

namespace asio = boost::asio;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int run(const std::string& config_path) {
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
  if (auto started = service.start(config_path); !started) {
    std::istringstream lines(started.error().message);
    for (std::string line; std::getline(lines, line);) std::cerr << "wctmon: " << line << "\n";
    return kExitError;
  }
  int stop_signal = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& error, int signal) {
        if (error) return;
        if (signal == kReloadSignal) {
          (void)service.reload();  // the service logs what it applied and what it refused
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wctmond: the wctmon monitoring service"};
  std::string config_path;
  app.add_option("--config,-c", config_path, "Configuration file")->type_name("FILE");
  wctmon::app::IncidentsArgs incidents_args;
  auto* incidents = app.add_subcommand(
      "incidents", "List recorded incidents from the store, or show one whole with --id");
  wctmon::app::addIncidentsOptions(*incidents, incidents_args);
  if (const auto exit = wctmon::cli::parseCommandLine(app, argc, argv, "wctmon", "wctmond")) {
    return *exit;
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
