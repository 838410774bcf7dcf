#include "api/metrics.h"

#include <CivetServer.h>
#include <prometheus/collectable.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <utility>
#include <vector>

#include "api/process_figures.h"
#include "api/target_figures.h"

namespace wctmon::api {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

using Labels = std::vector<ClientMetric::Label>;

/// One series of a family: its labels and its value.
struct Series {
  Labels labels;
  double value = 0;
};

MetricFamily family(std::string name, std::string help, MetricType type,
                    std::vector<Series> series) {
  MetricFamily out{std::move(name), std::move(help), type, {}};
  for (auto& [labels, value] : series) {
    ClientMetric m;
    m.label = std::move(labels);
    (type == MetricType::Counter ? m.counter.value : m.gauge.value) = value;
    out.metric.push_back(std::move(m));
  }
  return out;
}

double secondsSinceEpoch(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

/// The open incidents of each target by kind, when the oldest opened, and what each target
/// watches: as many series as targets times kinds, whatever happens on the host.
void addTargets(std::vector<MetricFamily>& out, const std::vector<TargetFigures>& targets) {
  std::vector<Series> open;
  std::vector<Series> oldest;
  std::vector<Series> watched;
  for (const auto& t : targets) {
    // Every kind of every target, zeros included: a panel shows the target before its first
    // incident, and `== 0` means what it says.
    for (const auto kind : kIncidentKinds) {
      const auto k = static_cast<std::size_t>(kind);
      const Labels labels{{"target", t.target}, {"kind", toString(kind)}};
      open.push_back({labels, static_cast<double>(t.open[k])});
      if (t.oldest[k]) oldest.push_back({labels, secondsSinceEpoch(*t.oldest[k])});
    }
    watched.push_back({{{"target", t.target}}, static_cast<double>(t.watched)});
  }
  out.push_back(family("wctmon_target_incidents_open",
                       "Incidents open now, by target and kind (every target and kind, zeros "
                       "included).",
                       MetricType::Gauge, std::move(open)));
  out.push_back(family("wctmon_target_oldest_incident_start_time_seconds",
                       "When the oldest incident open now of the target and kind opened, in "
                       "seconds since the Unix epoch (only where one is open).",
                       MetricType::Gauge, std::move(oldest)));
  out.push_back(family("wctmon_target_watched_processes",
                       "Processes the target watches now (every target, zeros included).",
                       MetricType::Gauge, std::move(watched)));
}

/// The standard figures of the service's own process, named and explained as Prometheus'
/// client libraries do, so that the dashboards made for them work.
void addProcess(std::vector<MetricFamily>& out) {
  const auto figures = readProcessFigures();
  if (!figures) return;  // nothing rather than zeros that would look like figures
  const auto gauge = [&](const char* name, const char* help, double value) {
    out.push_back(family(name, help, MetricType::Gauge, {{{}, value}}));
  };
  out.push_back(family("process_cpu_seconds_total",
                       "Total user and system CPU time spent in seconds.", MetricType::Counter,
                       {{{}, figures->cpu_seconds}}));
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
        static_cast<double>(figures->resident_bytes));
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
        static_cast<double>(figures->virtual_bytes));
  gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
        figures->start_time_seconds);
  if (figures->open_fds) {
    gauge("process_open_fds", "Number of open file descriptors.",
          static_cast<double>(*figures->open_fds));
  }
  if (figures->max_fds) {
    gauge("process_max_fds", "Maximum number of open file descriptors.",
          static_cast<double>(*figures->max_fds));
  }
  if (figures->threads) {
    gauge("process_threads", "Number of OS threads in the process.",
          static_cast<double>(*figures->threads));
  }
}

}  // namespace

/// The figures read at scrape time, as prometheus-cpp's metric families.
class Metrics::Figures final : public prometheus::Collectable {
 public:
  explicit Figures(Dependencies deps) : deps_(std::move(deps)) {}

  std::vector<MetricFamily> Collect() const override {
    const auto stats = deps_.monitor.stats();
    const auto facts = deps_.control.facts();
    const auto incidents = deps_.incidents.openIncidents();
    std::array<std::uint64_t, kIncidentKindCount> open{};
    for (const auto& incident : *incidents) {
      ++open[static_cast<std::size_t>(incident.kind)];
    }
    const auto d = [](auto v) { return static_cast<double>(v); };
    std::vector<MetricFamily> out;
    const auto add = [&](std::string name, std::string help, MetricType type,
                         std::vector<std::pair<ClientMetric::Label, double>> values) {
      std::vector<Series> series;
      for (auto& [label, value] : values) {
        series.push_back({label.name.empty() ? Labels{} : Labels{label}, value});
      }
      out.push_back(family(std::move(name), std::move(help), type, std::move(series)));
    };
    const auto one = [](double value) {
      return std::vector<std::pair<ClientMetric::Label, double>>{{{}, value}};
    };
    const auto byKind = [&](const std::array<std::uint64_t, kIncidentKindCount>& counts) {
      std::vector<std::pair<ClientMetric::Label, double>> values;
      for (const auto kind : kIncidentKinds) {
        values.push_back({{"kind", toString(kind)}, d(counts[static_cast<std::size_t>(kind)])});
      }
      return values;
    };
    add("wctmon_incidents_open", "Incidents open now, by kind.", MetricType::Gauge, byKind(open));
    add("wctmon_incidents_total", "Incidents opened since the service started, by kind.",
        MetricType::Counter, byKind(stats.opened_by_kind));
    add("wctmon_incidents_resolved_total", "Incidents resolved since the service started.",
        MetricType::Counter, one(d(stats.incidents_resolved)));
    add("wctmon_samples_total", "Samples of watched processes taken.", MetricType::Counter,
        one(d(stats.samples)));
    add("wctmon_samples_skipped_total",
        "Turns skipped because the process's previous sample was still running.",
        MetricType::Counter, one(d(facts.samples_skipped)));
    add("wctmon_samples_overdue_total", "Samples cancelled past their deadline.",
        MetricType::Counter, one(d(facts.samples_overdue)));
    add("wctmon_sample_errors_total", "Samples that failed (the process was not readable).",
        MetricType::Counter, one(d(stats.sample_errors)));
    add("wctmon_captures_total", "Evidence captures (registers and stacks) of deadlocks.",
        MetricType::Counter, one(d(stats.captures)));
    add("wctmon_dumps_total",
        "Dumps of incidents' processes, by outcome (failed: the incident says why).",
        MetricType::Counter,
        {{{"outcome", "written"}, d(stats.dumps)}, {{"outcome", "failed"}, d(stats.dumps_failed)}});
    add("wctmon_store_errors_total",
        "Incident store writes that failed (while the store fails, one per retry: at most one a "
        "second).",
        MetricType::Counter, one(d(stats.store_errors)));
    add("wctmon_store_pending_writes",
        "Incidents whose latest change waits for the store (a full disk, say).", MetricType::Gauge,
        one(d(stats.pending_writes)));
    add("wctmon_store_writes_dropped_total",
        "Incident changes dropped because too many waited for the store.", MetricType::Counter,
        one(d(stats.store_writes_dropped)));
    add("wctmon_alerts_suppressed_total", "Alerts not sent because of the per-target rate limit.",
        MetricType::Counter, one(d(stats.alerts_suppressed)));
    const auto bySink = [&](auto figure) {
      std::vector<std::pair<ClientMetric::Label, double>> values;
      for (const auto& s : facts.alert_sinks) values.push_back({{"sink", s.name}, d(figure(s))});
      return values;
    };
    add("wctmon_alerts_delivered_total", "Alerts each sink delivered.", MetricType::Counter,
        bySink([](const AlertRouter::SinkStats& s) { return s.delivered; }));
    add("wctmon_alerts_failed_total",
        "Alerts a sink could not deliver: the log or the receiver refused them, or the receiver "
        "stayed unreachable for the sink's retry_for_ms.",
        MetricType::Counter, bySink([](const AlertRouter::SinkStats& s) { return s.failed; }));
    add("wctmon_alerts_retried_total",
        "Deliveries tried again because the receiver did not take them (unreachable, 5xx, 429).",
        MetricType::Counter, bySink([](const AlertRouter::SinkStats& s) { return s.retried; }));
    add("wctmon_alerts_dropped_total",
        "Alerts dropped unsent because the sink's queue was full (a sink that is stuck).",
        MetricType::Counter, bySink([](const AlertRouter::SinkStats& s) { return s.dropped; }));
    add("wctmon_alerts_queued", "Alerts waiting for each sink.", MetricType::Gauge,
        bySink([](const AlertRouter::SinkStats& s) { return s.queued; }));
    add("wctmon_targets", "Targets configured or added at run time.", MetricType::Gauge,
        one(d(stats.targets)));
    add("wctmon_watched_processes", "Processes watched now.", MetricType::Gauge,
        one(d(stats.watched)));
    add("wctmon_watched_threads", "Threads of the watched processes at their last samples.",
        MetricType::Gauge, one(d(stats.watched_threads)));
    add("wctmon_api_watchers", "API clients following incidents (WatchIncidents).",
        MetricType::Gauge, one(d(deps_.watchers ? deps_.watchers() : 0)));
    const auto connections = deps_.connections ? deps_.connections() : ConnectionFront::Counts{};
    add("wctmon_api_connections", "Connections open to the API's Unix sockets and plain TCP.",
        MetricType::Gauge, one(d(connections.open)));
    add("wctmon_api_connections_closed_total",
        "API connections closed for their client's fault, by reason (see the README).",
        MetricType::Counter,
        {{{"reason", "not_http2"}, d(connections.not_http2)},
         {{"reason", "rapid_reset"}, d(connections.rapid_reset)},
         {{"reason", "no_preface"}, d(connections.no_preface)},
         {{"reason", "idle"}, d(connections.idle)},
         {{"reason", "over_limit"}, d(connections.over_limit)}});
    // The targets' liveness probes, one series per probed target (the target label is the
    // configuration's name: as few as the targets).
    const auto probes = deps_.control.probes();
    const auto byTarget = [&](auto value) {
      std::vector<std::pair<ClientMetric::Label, double>> values;
      for (const auto& p : probes) values.push_back({{"target", p.target}, d(value(p.status))});
      return values;
    };
    using ProbeStatus = ProbeTracker::Status;
    add("wctmon_probe_up", "1 when the target's last liveness probe passed.", MetricType::Gauge,
        byTarget([](const ProbeStatus& s) { return s.last && s.last->passed ? 1 : 0; }));
    add("wctmon_probe_unresponsive",
        "1 while the target has failed its probe enough times in a row to be unresponsive.",
        MetricType::Gauge,
        byTarget([](const ProbeStatus& s) { return s.state == "unresponsive" ? 1 : 0; }));
    add("wctmon_probe_duration_seconds",
        "How long the target's last probe took (to its answer, or to its deadline).",
        MetricType::Gauge, byTarget([](const ProbeStatus& s) {
          return s.last ? static_cast<double>(s.last->latency.count()) / 1e6 : 0.0;
        }));
    add("wctmon_probe_failures_total", "Liveness probes of the target that failed.",
        MetricType::Counter, byTarget([](const ProbeStatus& s) { return s.failed; }));
    add("wctmon_probe_passes_total", "Liveness probes of the target that passed.",
        MetricType::Counter, byTarget([](const ProbeStatus& s) { return s.passed; }));
    addTargets(out, targetFigures(deps_.monitor.watchedByTarget(), *incidents));
    add("wctmon_healthy", "1 while the scheduler is healthy (not every worker stuck).",
        MetricType::Gauge, one(facts.healthy ? 1 : 0));
    add("wctmon_wait_chain_source_available", "1 when wait chains can be read on this host.",
        MetricType::Gauge, one(facts.source_available ? 1 : 0));
    MetricFamily build{"wctmon_build_info",
                       "The version and platform of the running service.",
                       MetricType::Gauge,
                       {}};
    ClientMetric info;
    info.label = {{"platform", facts.platform}, {"version", facts.version}};
    info.gauge.value = 1;
    build.metric.push_back(std::move(info));
    out.push_back(std::move(build));
    addProcess(out);
    return out;
  }

 private:
  Dependencies deps_;
};

/// GET /metrics: the registry's histogram and the figures in Prometheus' text format.
///
/// Served here rather than by prometheus-cpp's Exposer, which adds families of its own that
/// cannot be left out (exposer_*, without the wctmon_ prefix, one of them a summary in
/// microseconds that reads NaN until it has observations); Prometheus measures every scrape
/// itself (scrape_duration_seconds, scrape_samples_scraped).
class Metrics::Page final : public CivetHandler {
 public:
  Page(std::shared_ptr<prometheus::Registry> registry, std::shared_ptr<Figures> figures)
      : registry_(std::move(registry)), figures_(std::move(figures)) {}

  bool handleGet(CivetServer* /*server*/, mg_connection* connection) override {
    auto families = registry_->Collect();
    auto figures = figures_->Collect();
    families.insert(families.end(), std::make_move_iterator(figures.begin()),
                    std::make_move_iterator(figures.end()));
    const auto body = prometheus::TextSerializer().Serialize(families);
    const auto head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n";
    mg_write(connection, head.data(), head.size());
    mg_write(connection, body.data(), body.size());
    return true;
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<Figures> figures_;
};

Metrics::Metrics(Dependencies deps)
    : registry_(std::make_shared<prometheus::Registry>()),
      figures_(std::make_shared<Figures>(std::move(deps))) {
  // From half a millisecond (a small process) to ten seconds (past any sane deadline).
  sample_duration_ =
      &prometheus::BuildHistogram()
           .Name("wctmon_sample_duration_seconds")
           .Help("How long a sample of one process took, from its start to its decisions.")
           .Register(*registry_)
           .Add({},
                prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                        0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
}

Metrics::~Metrics() = default;

Status Metrics::start(const std::string& listen) {
  page_ = std::make_unique<Page>(registry_, figures_);
  try {
    // Anyone who can reach the address may connect: a worker per connection, so a few idle
    // ones must not hold every worker (one worker failed every scrape behind 2 of them), and a
    // connection that sends no request is closed within a scrape's timeout.
    server_ = std::make_unique<CivetServer>(std::vector<std::string>{
        "listening_ports", listen, "num_threads", std::to_string(kWorkers), "request_timeout_ms",
        std::to_string(kRequestTimeout.count()), "enable_keep_alive", "no"});
  } catch (const std::exception& e) {
    return Error{ErrorCode::kIo,
                 "cannot serve metrics at " + listen + " (metrics.listen): " + e.what()};
  }
  server_->addHandler("/metrics", page_.get());
  const auto ports = server_->getListeningPorts();
  listening_ = listen;
  if (!ports.empty()) {
    listening_ = listen.substr(0, listen.rfind(':') + 1) + std::to_string(ports.front());
  }
  return std::monostate{};
}

void Metrics::stop() { server_.reset(); }

void Metrics::observeSample(std::chrono::microseconds duration) {
  sample_duration_->Observe(std::chrono::duration<double>(duration).count());
}

}  // namespace wctmon::api
