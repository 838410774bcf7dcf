#include "api/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <utility>
#include <vector>

namespace wctmon::api {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

/// The figures read at scrape time, as prometheus-cpp's metric families.
class Metrics::Figures final : public prometheus::Collectable {
 public:
  explicit Figures(Dependencies deps) : deps_(std::move(deps)) {}

  std::vector<MetricFamily> Collect() const override {
    const auto stats = deps_.monitor.stats();
    const auto facts = deps_.control.facts();
    std::array<std::uint64_t, kIncidentKindCount> open{};
    for (const auto& incident : *deps_.incidents.openIncidents()) {
      ++open[static_cast<std::size_t>(incident.kind)];
    }
    const auto d = [](auto v) { return static_cast<double>(v); };
    std::vector<MetricFamily> out;
    const auto add = [&](std::string name, std::string help, MetricType type,
                         std::vector<std::pair<ClientMetric::Label, double>> values) {
      MetricFamily family{std::move(name), std::move(help), type, {}};
      for (auto& [label, value] : values) {
        ClientMetric m;
        if (!label.name.empty()) m.label.push_back(label);
        (type == MetricType::Counter ? m.counter.value : m.gauge.value) = value;
        family.metric.push_back(std::move(m));
      }
      out.push_back(std::move(family));
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
    return out;
  }

 private:
  Dependencies deps_;
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
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return Error{ErrorCode::kIo,
                 "cannot serve metrics at " + listen + " (metrics.listen): " + e.what()};
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(figures_);
  const auto ports = exposer_->GetListeningPorts();
  listening_ = listen;
  if (!ports.empty()) {
    listening_ = listen.substr(0, listen.rfind(':') + 1) + std::to_string(ports.front());
  }
  return std::monostate{};
}

void Metrics::stop() { exposer_.reset(); }

void Metrics::observeSample(std::chrono::microseconds duration) {
  sample_duration_->Observe(std::chrono::duration<double>(duration).count());
}

}  // namespace wctmon::api
