// wctmond: the monitoring service, as `wctmon run --config FILE` starts it (in the foreground,
// under systemd or by hand). SIGTERM/SIGINT stop it gracefully, SIGHUP reloads the config.
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <iostream>

#include "app/incidents_command.h"
#include "app/logging.h"
#include "core/monitor.h"
#include "platform/platform_factory.h"
#include "platform/service_factory.h"
#include "runtime/scheduler.h"
#include "store/incident_store.h"

namespace {

namespace asio = boost::asio;
using wctmon::Config;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

std::chrono::milliseconds discoveryInterval(const Config& c) {
  if (c.sampling.discovery_interval.count() > 0) return c.sampling.discovery_interval;
  auto shortest = c.sampling.interval;
  for (const auto& t : c.targets) shortest = std::min(shortest, t.interval);
  return shortest;
}

std::string statusLine(const wctmon::MonitorStats& m, const wctmon::SchedulerStats& s) {
  return "watching " + std::to_string(m.watched) + " process(es); " +
         std::to_string(m.incidents_opened) + " incident(s) opened, " +
         std::to_string(m.incidents_resolved) + " resolved; " + std::to_string(s.samples_started) +
         " samples, " + std::to_string(s.samples_skipped) + " skipped, " +
         std::to_string(s.samples_overdue) + " overdue";
}

/// Raises the soft descriptor limit to the hard one: the sampler keeps a descriptor per watched
/// thread open, within a budget taken from this limit.
void raiseDescriptorLimit() {
  constexpr rlim_t kWanted = 65536;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  // Raising the hard limit needs CAP_SYS_RESOURCE, which the systemd unit does not grant (it
  // sets LimitNOFILE instead); by hand as root it works. Either way the soft limit follows.
  if (limit.rlim_max < kWanted) {
    rlimit raised{kWanted, kWanted};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  }
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

/// Says where alerts go, at start and at each reload: an alert that nothing takes is never lost
/// silently.
void logAlertRoute(const wctmon::AlertRoute& route) {
  if (route.delivered) {
    spdlog::info("{}", route.description);
  } else {
    spdlog::warn("{}", route.description);
  }
}

int run(const std::string& config_path) {
  raiseDescriptorLimit();
  auto parsed = wctmon::loadConfig(config_path);
  if (!parsed.config) {
    for (const auto& e : parsed.errors) std::cerr << "wctmon: " << e.describe(config_path) << "\n";
    return kExitError;
  }
  Config config = std::move(*parsed.config);
  std::error_code ec;
  std::filesystem::create_directories(config.state_dir, ec);
  if (ec) {
    // mkdir over a file says "File exists", which hides what is wrong: name the file.
    std::string reason = ec.message();
    for (auto p = config.state_dir; p.has_relative_path(); p = p.parent_path()) {
      std::error_code ignored;
      const auto status = std::filesystem::status(p, ignored);
      if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
        reason = p.string() + " is a file, not a directory";
        break;
      }
    }
    std::cerr << "wctmon: cannot create the state directory " << config.state_dir.string() << ": "
              << reason << "\n";
    return kExitError;
  }
  if (auto error = wctmon::app::setUpLogging(config); !error.empty()) {
    std::cerr << "wctmon: " << error << "\n";
    return kExitError;
  }
  auto store = wctmon::IncidentStore::open(config.state_dir / "incidents.db");
  if (!store) {
    spdlog::critical("{}", store.error().message);
    wctmon::app::shutDownLogging();
    return kExitError;
  }

  // One execution context for everything the service does: samples' platform work, their
  // completions on per-process strands, and the monitor's side effects.
  wctmon::WorkerPool pool(config.sampling.threads);
  auto source = wctmon::makeWaitChainSource(pool.work());
  auto inspector = wctmon::makeThreadInspector();
  auto catalog = wctmon::makeProcessCatalog();
  auto alerts = wctmon::makeAlertSink();
  logAlertRoute(alerts->route(config.alerts.sink));
  auto host = wctmon::makeServiceHost();
  wctmon::SystemClock clock;

  wctmon::Monitor monitor(
      {*source, inspector.get(), *catalog, store->get(), alerts.get(), clock, pool.work()}, config);
  monitor.adoptStoredIncidents();

  // The watchdog is fed from the scheduler's own health check: if the scheduler's loop stops,
  // or every worker is stuck, systemd stops hearing from us and restarts the service.
  wctmon::Scheduler::Options options;
  options.discovery_interval = discoveryInterval(config);
  options.deadline = config.sampling.deadline;
  if (auto interval = host->watchdogInterval()) {
    options.health_interval = std::min<std::chrono::milliseconds>(
        options.health_interval,
        std::chrono::duration_cast<std::chrono::milliseconds>(*interval / 3));
  }
  options.on_health = [&](bool healthy, const wctmon::SchedulerStats& s) {
    if (healthy) host->watchdog();
    host->status(statusLine(monitor.stats(), s));
  };
  wctmon::Scheduler scheduler(monitor, pool, options);

  asio::io_context signals_io;
  asio::signal_set signals(signals_io, SIGTERM, SIGINT, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& error, int signal) {
        if (error) return;
        if (signal == SIGHUP) {
          host->reloading();
          auto reloaded = wctmon::loadConfig(config_path);
          if (!reloaded.config) {
            for (const auto& e : reloaded.errors) {
              spdlog::error("reload refused, keeping the running config: {}: {}", config_path,
                            e.toString());
            }
            if (alerts) {
              wctmon::Alert a;
              a.kind = wctmon::AlertKind::kConfigError;
              a.severity = wctmon::AlertSeverity::kError;
              a.message = "configuration reload refused: " + reloaded.errors.front().toString();
              alerts->send(a);
            }
          } else {
            monitor.reconfigure(*reloaded.config);
            logAlertRoute(alerts->route(reloaded.config->alerts.sink));
            scheduler.setOptions(discoveryInterval(*reloaded.config),
                                 reloaded.config->sampling.deadline);
            spdlog::info("configuration reloaded from {}", config_path);
          }
          host->ready("running");
          signals.async_wait(on_signal);
          return;
        }
        spdlog::info("signal {}: stopping", signal);
        signals_io.stop();
      };
  signals.async_wait(on_signal);

  scheduler.start();
  host->ready("running");
  spdlog::info("wctmon service started (config {}, state {})", config_path,
               config.state_dir.string());
  if (alerts) {
    wctmon::Alert a;
    a.kind = wctmon::AlertKind::kServiceStarted;
    a.message = "wctmon service started";
    alerts->send(a);
  }

  signals_io.run();

  host->stopping();
  scheduler.stop();
  if (alerts) {
    wctmon::Alert a;
    a.kind = wctmon::AlertKind::kServiceStopped;
    a.message = "wctmon service stopped";
    alerts->send(a);
  }
  spdlog::info("wctmon service stopped");
  wctmon::app::shutDownLogging();
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "wctmon: " << wctmon::app::describeUsageError(app, "wctmond", e) << "\n";
    return kExitUsage;
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
