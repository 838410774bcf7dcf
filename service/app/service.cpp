#include "app/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

#include "api/local_socket.h"
#include "api/metrics.h"
#include "api/server.h"
#include "app/config_keys.h"
#include "app/logging.h"
#include "core/alert_router.h"
#include "core/dump_keeper.h"
#include "core/monitor.h"
#include "core/on_demand_analysis.h"
#include "os/owned_files.h"
#include "platform/platform_factory.h"
#include "platform/service_factory.h"
#include "runtime/http_alert_sinks.h"
#include "runtime/network_prober.h"
#include "runtime/probe_scheduler.h"
#include "runtime/scheduler.h"
#include "runtime/symptom_watchers.h"
#include "store/incident_store.h"
#include "store/state_lock.h"
#include "wire/json_writer.h"

namespace wctmon::app {
namespace {

/// The configured alert sinks and where they deliver, in words for the status.
struct AlertRoutes {
  /// "journald, syslog"; "none".
  std::string configured;
  std::string description;
  /// Whether every sink delivers somewhere.
  bool delivered = true;
};

}  // namespace

/// Everything start() builds. Members are released in reverse order: the scheduler, the
/// monitor, the incident effects, the targets, the platform's pieces, the pool, the store, and
/// the log last.
struct Service::Running {
  /// Released last: the state directory is this service's until everything else is gone.
  std::unique_ptr<StateLock> lock;
  Config config;
  std::unique_ptr<ServiceLog> log;
  std::unique_ptr<IncidentStore> store;
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<WaitChainSource> source;
  std::unique_ptr<ThreadInspector> inspector;
  std::unique_ptr<ProcessCatalog> catalog;
  std::unique_ptr<ProcessDumper> dumper;
  /// The dumps under state_dir/dumps.
  std::unique_ptr<DumpKeeper> dumps;
  /// Every alert goes through it to each configured sink.
  std::unique_ptr<AlertRouter> alerts;
  SystemClock clock;
  std::unique_ptr<TargetRegistry> targets;
  /// Where the monitor's decisions are captured, recorded and alerted; the open incidents.
  std::unique_ptr<IncidentEffects> incidents;
  std::unique_ptr<Monitor> monitor;
  /// Samples busy threads' frames for the monitor; released before it (its thread calls back).
  std::unique_ptr<HotSpotSampler> hot_spots;
  std::unique_ptr<OnDemandAnalysis> analysis;
  std::unique_ptr<Scheduler> scheduler;
  /// The targets' liveness probes: the platform's, the prober, and what runs them (stopped
  /// before the scheduler stops the pool).
  std::unique_ptr<LocalProber> local_prober;
  std::unique_ptr<NetworkProber> prober;
  std::unique_ptr<ProbeScheduler> probes;
  /// Services stuck pending and windows that stop answering: the platform's readers (none on
  /// Linux) and what polls them (stopped before the scheduler stops the pool).
  std::unique_ptr<ServiceStatusSource> service_status;
  std::unique_ptr<WindowProber> window_prober;
  std::unique_ptr<SymptomWatchers> watchers;
  std::chrono::system_clock::time_point started_at;
  /// The sinks the configuration asked for and where each delivers, as chosen at start and at
  /// the last reload (Service::mutex_).
  AlertRoutes alert_routes;
  std::unique_ptr<Control> control;
  /// Declared last: released first, while everything their calls use is still there (a scrape
  /// reads the API's watcher count).
  std::unique_ptr<api::ApiServer> api;
  std::unique_ptr<api::Metrics> metrics;
};

/// The service as the API sees it.
class Service::Control final : public api::ServiceControl {
 public:
  Control(Service& service, Running& running) : service_(service), running_(running) {}

  [[nodiscard]] std::vector<TargetProbeStatus> probes() const override {
    return running_.probes->statuses();
  }

  [[nodiscard]] api::ServiceFacts facts() const override {
    api::ServiceFacts f;
    f.version = WCTMON_VERSION;
#ifdef _WIN32
    f.platform = "windows";
#else
    f.platform = "linux";
#endif
    f.started_at = running_.started_at;
    const auto source = sourceAvailability();
    f.source = source.name;
    f.source_available = source.available;
    f.source_reason = source.reason;
    {
      // Not the monitor's configuration: a status read takes no lock of the monitor's.
      std::lock_guard lock(service_.mutex_);
      f.alerts_configured = running_.alert_routes.configured;
      f.alerts_route = running_.alert_routes.description;
      f.alerts_deliver = running_.alert_routes.delivered;
      f.alert_sinks = running_.alerts->stats();
      if (!service_.restart_note_.empty()) f.restart_needed = service_.restart_keys_;
    }
    const auto stats = running_.scheduler->stats();
    f.samples_skipped = stats.samples_skipped;
    f.samples_overdue = stats.samples_overdue;
    f.last_sample = stats.last_sample;
    f.p99_sample = stats.p99_sample;
    f.healthy = stats.healthy;
    return f;
  }

  [[nodiscard]] api::ReloadOutcome reload() override {
    auto report = service_.reload();
    api::ReloadOutcome out;
    out.errors = std::move(report.errors);
    out.applied = std::move(report.applied);
    out.needs_restart = std::move(report.needs_restart);
    for (auto& f : report.failed) out.failed[f.key] = std::move(f.reason);
    return out;
  }

 private:
  /// Whether the wait-chain source works costs system calls (access, geteuid): status is asked
  /// thousands of times a second by dashboards, so the answer is kept for a second.
  WaitChainSource::Availability sourceAvailability() const {
    constexpr auto kKept = std::chrono::seconds(1);
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(availability_mutex_);
    if (!availability_ || now - availability_read_ >= kKept) {
      availability_ = running_.source->availability();
      availability_read_ = now;
    }
    return *availability_;
  }

  Service& service_;
  Running& running_;
  mutable std::mutex availability_mutex_;
  mutable std::optional<WaitChainSource::Availability> availability_;
  mutable std::chrono::steady_clock::time_point availability_read_;
};

namespace {

std::chrono::milliseconds discoveryInterval(const Config& c) {
  if (c.sampling.discovery_interval.count() > 0) return c.sampling.discovery_interval;
  auto shortest = c.sampling.interval;
  for (const auto& t : c.targets) shortest = std::min(shortest, t.interval);
  return shortest;
}

std::string statusLine(const MonitorStats& m, const SchedulerStats& s) {
  return "watching " + std::to_string(m.watched) + " process(es); " +
         std::to_string(m.incidents_opened) + " incident(s) opened, " +
         std::to_string(m.incidents_resolved) + " resolved; " + std::to_string(s.samples_started) +
         " samples, " + std::to_string(s.samples_skipped) + " skipped, " +
         std::to_string(s.samples_overdue) + " overdue";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// Chooses where each configured sink delivers (the system logs may have come up or gone away
/// since the last time) and says so in the log, at start and at each reload: an alert that
/// nothing takes is never lost silently.
std::pair<std::vector<AlertRouter::Route>, AlertRoutes> routeAlerts(
    const std::vector<Config::AlertSinkConfig>& sinks) {
  std::vector<AlertRouter::Route> routes;
  AlertRoutes said;
  for (const auto& s : sinks) {
    std::shared_ptr<AlertSink> sink;
    AlertRoute route;
    if (s.http()) {
      if (auto made = makeHttpAlertSink(s)) {
        sink = std::move(made->sink);
        route.description = std::move(made->description);
      } else {
        // The configuration's check parsed the URL already: only a bug comes here.
        route = {"alerts are NOT delivered to " + s.name + ": " + made.error().message, false};
      }
    } else {
      auto system_log = makeAlertSink();
      route = system_log->route(s.type);
      sink = std::move(system_log);
    }
    said.configured += (said.configured.empty() ? "" : ", ") + s.name;
    said.description += (said.description.empty() ? "" : "; ") + route.description;
    said.delivered = said.delivered && route.delivered;
    if (route.delivered) {
      spdlog::info("{}", route.description);
    } else {
      spdlog::warn("{}", route.description);
    }
    if (sink)
      routes.push_back({s.name, std::move(sink), s.queue,
                        s.http() ? s.retry_for : std::chrono::milliseconds::zero()});
  }
  if (sinks.empty()) {
    said = {"none", "alerts are off (alerts.sinks is empty)", true};
    spdlog::info("{}", said.description);
  }
  return {std::move(routes), std::move(said)};
}

/// Says so when no target is configured nor added at run time: a service that watches nothing
/// looks healthy from outside, and an operator who installed it needs to know why nothing is
/// ever found.
void warnWhenNothingIsWatched(const MonitorStats& stats, const std::filesystem::path& config) {
  if (stats.targets != 0) return;
  spdlog::warn(
      "no targets: no process is watched (add targets to {}, then reload, or add one with "
      "wctctl targets add)",
      config.string());
}

void sendServiceAlert(AlertSink& sink, AlertKind kind, AlertSeverity severity, std::string message,
                      std::vector<std::pair<std::string, std::string>> fields) {
  Alert a;
  a.kind = kind;
  a.severity = severity;
  a.message = std::move(message);
  a.fields = std::move(fields);
  (void)sink.send(a);
}

/// Makes the state directory, or checks the one there: the service's own (or root's), which no
/// other user may write in; the group api.group's when there is one, whose members read the
/// reader token in it (0750), the account's alone otherwise (0700). A file in the way is named
/// (mkdir over a file says "File exists", which hides what is wrong).
Status prepareStateDir(const std::filesystem::path& dir, const Config::Api& api) {
  const auto group = api::findLocalGroup(api.group);
  std::string reason = prepareOwnedDirectory(
      dir, group ? 0750 : 0700, group ? std::optional<unsigned>(group->id) : std::nullopt);
  if (reason.empty()) return std::monostate{};
  for (auto p = dir; p.has_relative_path(); p = p.parent_path()) {
    std::error_code ignored;
    const auto status = std::filesystem::status(p, ignored);
    if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
      reason = p.string() + " is a file, not a directory";
      break;
    }
  }
  return makeError(ErrorCode::kIo,
                   "the state directory " + dir.string() + " (state_dir): " + reason);
}

/// The log keys whose change re-opens the log's sinks (all of them but the level).
bool reopensLog(const ConfigKey& key) {
  return key.name.starts_with("log.") && key.name != "log.level";
}

}  // namespace

Service::Service(std::unique_ptr<ServiceHost> host) : host_(std::move(host)) {}

Service::~Service() { stop("the service is destroyed"); }

Status Service::start(const std::filesystem::path& config_path) {
  {
    std::lock_guard lock(mutex_);
    if (state_ != ServiceState::kStopped) {
      return makeError(ErrorCode::kBusy, "the service is already running");
    }
    state_ = ServiceState::kStarting;
  }
  const auto failed = [&](Error error) {
    std::lock_guard lock(mutex_);
    state_ = ServiceState::kStopped;
    return Status(std::move(error));
  };
  try {
    // Before any platform piece is made: the sampler sizes its descriptor budget from limits.
    prepareServiceProcess();
    auto parsed = loadConfig(config_path);
    if (!parsed) {
      std::string message;
      for (const auto& e : parsed.error()) {
        message += (message.empty() ? "" : "\n") + e.describe(config_path);
      }
      return failed(makeError(ErrorCode::kInvalidArgument, message));
    }
    auto r = std::make_unique<Running>();
    r->config = std::move(parsed).value();
    const Config& config = r->config;
    if (auto made = prepareStateDir(config.state_dir, config.api); !made)
      return failed(made.error());
    auto owned = StateLock::acquire(config.state_dir);
    if (!owned) return failed(owned.error());
    r->lock = std::move(owned).value();
    auto log = ServiceLog::start(config);
    if (!log) return failed(log.error());
    r->log = std::move(log).value();
    // A damaged store must not keep monitoring down: it is moved aside (kept for whoever wants
    // to look at it) and a new one is made; said in the log now and as an alert once alerts run.
    auto store = IncidentStore::openOrMoveAside(config.state_dir / "incidents.db",
                                                std::chrono::system_clock::now());
    if (!store) return failed(store.error());
    r->store = std::move(store->store);
    std::optional<std::string> moved_aside;
    if (store->moved_aside) {
      moved_aside = store->moved_aside->reason + "; it was moved aside to " +
                    store->moved_aside->to.string() +
                    " and a new, empty incident store was made in its place";
      spdlog::error("{}", *moved_aside);
    }

    // One execution context for everything the service does: samples' platform work, their
    // completions on per-process strands, and the incident effects.
    r->pool = std::make_unique<WorkerPool>(config.sampling.threads);
    r->source = makeWaitChainSource(r->pool->work());
    r->inspector = makeThreadInspector();
    r->catalog = makeProcessCatalog();
    auto [routes, said] = routeAlerts(config.alerts.sinks);
    r->alerts = std::make_unique<AlertRouter>(std::move(routes));
    r->alert_routes = std::move(said);
    r->targets = std::make_unique<TargetRegistry>(r->store.get(), config);
    r->dumper = makeProcessDumper();
    r->dumps = std::make_unique<DumpKeeper>(
        DumpKeeper::Dependencies{*r->dumper, config.state_dir / "dumps", r->clock,
                                 [](const Incident& i) { return wire::incidentToJson(i); }},
        config.capture);
    r->incidents = std::make_unique<IncidentEffects>(
        IncidentEffects::Dependencies{r->store.get(), r->inspector.get(), r->alerts.get(),
                                      r->dumps.get(), r->clock, r->pool->work(),
                                      [targets = r->targets.get()] { return targets->runtime(); }},
        config.alerts);
    r->hot_spots = makeHotSpotSampler();
    r->monitor = std::make_unique<Monitor>(
        Monitor::Dependencies{*r->source, *r->catalog, r->clock, *r->targets, *r->incidents,
                              r->hot_spots.get()},
        config);
    r->monitor->adoptStoredIncidents();
    r->analysis = std::make_unique<OnDemandAnalysis>(*r->source, r->inspector.get());

    // The watchdog is fed from the scheduler's own health check: if the scheduler's loop stops,
    // or every worker is stuck, the supervisor stops hearing from us and restarts the service.
    Scheduler::Options options;
    options.discovery_interval = discoveryInterval(config);
    options.deadline = config.sampling.deadline;
    if (auto interval = host_->watchdogInterval()) {
      options.health_interval = std::min<std::chrono::milliseconds>(
          options.health_interval,
          std::chrono::duration_cast<std::chrono::milliseconds>(*interval / 3));
    }
    options.watch_health_check = true;
    options.retention = [running = r.get()] {
      running->incidents->applyRetention(running->monitor->config().retention);
    };
    options.on_health = [this, running = r.get()](bool healthy, const SchedulerStats& s) {
      if (healthy) host_->watchdog();
      if (running->api) running->api->setServing(healthy);
      host_->status(withRestartNote(statusLine(running->monitor->stats(), s)));
    };
    r->started_at = std::chrono::system_clock::now();
    r->control = std::make_unique<Control>(*this, *r);
    if (config.metrics.enabled) {
      r->metrics = std::make_unique<api::Metrics>(api::Metrics::Dependencies{
          *r->monitor, *r->incidents, *r->control,
          [running = r.get()]() -> std::size_t {
            return running->api ? running->api->watchers() : 0;
          },
          [running = r.get()] {
            return running->api ? running->api->connections() : api::ConnectionFront::Counts{};
          }});
      options.on_sample = [metrics = r->metrics.get()](std::chrono::microseconds took) {
        metrics->observeSample(took);
      };
    }
    r->scheduler = std::make_unique<Scheduler>(*r->monitor, *r->pool, std::move(options));
    r->local_prober = makeLocalProber();
    r->prober =
        std::make_unique<NetworkProber>(r->pool->context(), r->pool->work(), *r->local_prober);
    r->probes = std::make_unique<ProbeScheduler>(ProbeScheduler::Dependencies{
        *r->monitor, *r->targets, *r->prober, r->clock, r->pool->context(),
        WorkerPool::on(boost::asio::make_strand(r->pool->context()))});
    r->service_status = makeServiceStatusSource();
    r->window_prober = makeWindowProber();
    r->watchers = std::make_unique<SymptomWatchers>(
        SymptomWatchers::Dependencies{*r->monitor, r->service_status.get(), r->window_prober.get(),
                                      r->clock, r->pool->context(), r->pool->work(),
                                      WorkerPool::on(boost::asio::make_strand(r->pool->context()))},
        config);
    if (config.api.enabled) {
      auto api = api::ApiServer::start(
          config.api, config.state_dir,
          api::ApiServer::Dependencies{*r->monitor, *r->incidents, *r->targets, *r->analysis,
                                       r->store.get(), *r->control, r->pool->work()});
      if (!api) return failed(api.error());
      r->api = std::move(api).value();
      std::string where;
      for (const auto& l : r->api->listening()) where += (where.empty() ? "" : ", ") + l;
      spdlog::info("API listening on {}", where);
    }
    if (r->metrics) {
      if (auto served = r->metrics->start(config.metrics.listen); !served) {
        return failed(served.error());
      }
      spdlog::info("metrics served at http://{}/metrics", r->metrics->listening());
    }

    Running& running = *r;
    {
      std::lock_guard lock(mutex_);
      config_path_ = config_path;
      running_ = std::move(r);
      state_ = ServiceState::kRunning;
      restart_note_.clear();
      restart_keys_.clear();
    }
    running.scheduler->start();
    running.probes->start();
    running.watchers->start();
    host_->ready(status());
    spdlog::info("wctmon service started (config {}, state {})", config_path.string(),
                 running.config.state_dir.string());
    warnWhenNothingIsWatched(running.monitor->stats(), config_path);
    sendServiceAlert(*running.alerts, AlertKind::kServiceStarted, AlertSeverity::kInfo,
                     "wctmon service started",
                     {{"VERSION", WCTMON_VERSION}, {"CONFIG", config_path.string()}});
    if (moved_aside) {
      sendServiceAlert(*running.alerts, AlertKind::kStoreFault, AlertSeverity::kError, *moved_aside,
                       {{"REASON", *moved_aside}});
    }
    // The service runs on without wait chains (the API, the store, the incidents already
    // recorded, busy threads where the source still reads CPU times), but no hang or deadlock
    // will be detected: said where alerts are read, not only in its log.
    if (const auto source = running.source->availability(); !source.available) {
      spdlog::warn("wait chains cannot be read here ({}): {}", source.name, source.reason);
      sendServiceAlert(*running.alerts, AlertKind::kWaitChainSourceUnavailable,
                       AlertSeverity::kWarning,
                       "wait chains cannot be read here (" + source.name + "): " + source.reason,
                       {{"SOURCE", source.name}, {"REASON", source.reason}});
    }
    return std::monostate{};
  } catch (const std::exception& e) {
    // Thrown only while building (a thread that cannot be created): nothing runs yet.
    std::unique_ptr<Running> partial;
    {
      std::lock_guard lock(mutex_);
      partial = std::move(running_);
    }
    partial.reset();
    return failed(makeError(ErrorCode::kInternal, std::string("cannot start: ") + e.what()));
  }
}

ReloadReport Service::reload() {
  // SIGHUP and the API's ReloadConfig may come at once: one reload at a time.
  std::lock_guard reloading(reload_mutex_);
  ReloadReport report;
  Running* r = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (state_ != ServiceState::kRunning) return report;
    r = running_.get();  // only stop() releases it, and it is called from this thread
  }
  host_->reloading();
  auto loaded = loadConfig(config_path_);
  if (!loaded) {
    for (const auto& e : loaded.error()) {
      report.errors.push_back(e.describe(config_path_));
      spdlog::error("reload refused, keeping the running config: {}: {}", config_path_.string(),
                    e.toString());
    }
    sendServiceAlert(
        *r->alerts, AlertKind::kConfigError, AlertSeverity::kError,
        "configuration reload refused: " + loaded.error().front().toString(),
        {{"CONFIG", config_path_.string()}, {"REASON", loaded.error().front().toString()}});
    host_->ready(status());
    return report;
  }

  auto plan = planReload(r->config, *loaded);
  // The log first, so that what the reload says goes where the new configuration wants it.
  const bool reopen = std::any_of(plan.live.begin(), plan.live.end(),
                                  [](const ConfigKey* k) { return reopensLog(*k); });
  const bool relog = reopen || containsKey(plan.live, "log.level");
  Status logged = std::monostate{};
  if (relog) logged = r->log->reconfigure(plan.next.log);
  for (const ConfigKey* k : plan.live) {
    if (!logged && reopensLog(*k)) {
      report.failed.push_back({std::string(k->name), logged.error().message});
      k->copy(plan.next, r->config);
    } else {
      report.applied.emplace_back(k->name);
    }
  }
  // Whatever changed, the alert route is chosen again: the system log may have come up or gone
  // away since the last time.
  r->targets->reconfigure(plan.next);
  r->incidents->setAlertLimits(plan.next.alerts);
  r->dumps->setLimits(plan.next.capture);
  r->monitor->reconfigure(plan.next);
  r->watchers->reconfigure(plan.next);
  auto [routes, said] = routeAlerts(plan.next.alerts.sinks);
  r->alerts->replaceRoutes(std::move(routes));
  {
    std::lock_guard lock(mutex_);
    r->alert_routes = std::move(said);
  }
  r->scheduler->setOptions(discoveryInterval(plan.next), plan.next.sampling.deadline);

  for (const ConfigKey* k : plan.restart) {
    report.needs_restart.emplace_back(k->name);
    spdlog::warn("{} changed to {} in {}, which needs a restart ({}): still running with {}",
                 k->name, k->show(*loaded), config_path_.string(), k->why, k->show(plan.next));
  }
  for (const auto& f : report.failed) {
    spdlog::error("{} not applied, keeping the running value: {}", f.key, f.reason);
  }
  std::string summary =
      report.applied.empty() ? "no change applies live" : "applied " + join(report.applied);
  if (!report.needs_restart.empty()) {
    summary += "; needs a restart: " + join(report.needs_restart);
  }
  if (!report.failed.empty()) {
    std::vector<std::string> keys;
    for (const auto& f : report.failed) keys.push_back(f.key);
    summary += "; not applied: " + join(keys);
  }
  spdlog::info("configuration reloaded from {}: {}", config_path_.string(), summary);
  warnWhenNothingIsWatched(r->monitor->stats(), config_path_);
  r->config = std::move(plan.next);
  {
    std::lock_guard lock(mutex_);
    restart_note_ =
        report.needs_restart.empty() ? "" : "restart needed for " + join(report.needs_restart);
    restart_keys_ = report.needs_restart;
  }
  host_->ready(status());
  return report;
}

void Service::stop(std::string_view reason) {
  {
    std::lock_guard lock(mutex_);
    if (state_ != ServiceState::kRunning) return;
    state_ = ServiceState::kStopping;
  }
  if (!reason.empty()) spdlog::info("{}: stopping", reason);
  // running_ changes only here and in start(), both on the caller's thread.
  Running& r = *running_;
  host_->stopping();
  // The API first, while the pool still runs the calls in flight: they end, streams included,
  // within a second, and no new one starts.
  if (r.api) r.api->stop(std::chrono::seconds(1));
  // The probes and the watchers before the pool stops: what they have in flight ends by its
  // deadline (a probe's, a window's answer).
  const bool probes_ended = r.probes->stop();
  const bool watchers_ended = r.watchers->stop();
  const bool clean = r.scheduler->stop() && probes_ended && watchers_ended;
  // The metrics endpoint last, so that a scrape sees the service stop. (The histogram stays:
  // samples left behind still record into it when they end.)
  if (r.metrics) r.metrics->stop();
  sendServiceAlert(*r.alerts, AlertKind::kServiceStopped, AlertSeverity::kInfo,
                   "wctmon service stopped",
                   {{"REASON", reason.empty() ? std::string("stopped") : std::string(reason)}});
  // Delivered before the process may end, also when the rest cannot be released below.
  if (!r.alerts->flush(AlertRouter::kDrainTimeout)) {
    spdlog::warn("not every alert was delivered within {} ms of stopping",
                 AlertRouter::kDrainTimeout.count());
  }
  spdlog::info("wctmon service stopped");
  std::unique_ptr<Running> released;
  {
    std::lock_guard lock(mutex_);
    released = std::move(running_);
    state_ = ServiceState::kStopped;
    restart_note_.clear();
    restart_keys_.clear();
  }
  if (clean) {
    released.reset();
  } else {
    // A worker stuck in the kernel was left behind and may still wake up: the monitor, the
    // platform's pieces, the pool and the log it would use stay, and die with the process.
    static_cast<void>(released.release());
  }
}

ServiceState Service::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

std::string Service::status() const {
  std::lock_guard lock(mutex_);
  switch (state_) {
    case ServiceState::kStopped:
      return "stopped";
    case ServiceState::kStarting:
      return "starting";
    case ServiceState::kStopping:
      return "stopping";
    case ServiceState::kRunning:
      break;
  }
  auto line = statusLine(running_->monitor->stats(), running_->scheduler->stats());
  if (!restart_note_.empty()) line += "; " + restart_note_;
  return line;
}

std::string Service::withRestartNote(std::string line) const {
  std::lock_guard lock(mutex_);
  if (!restart_note_.empty()) line += "; " + restart_note_;
  return line;
}

}  // namespace wctmon::app
