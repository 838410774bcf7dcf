#include "app/config_keys.h"

#include <algorithm>
#include <array>

namespace wctmon::app {
namespace {

std::string showValue(const std::filesystem::path& v) { return v.string(); }
std::string showValue(unsigned v) { return std::to_string(v); }
std::string showValue(std::size_t v) { return std::to_string(v); }
std::string showValue(bool v) { return v ? "true" : "false"; }
std::string showValue(DumpPolicy v) { return std::string(dumpPolicyName(v)); }
std::string showValue(const std::string& v) { return "\"" + v + "\""; }
std::string showValue(const std::optional<std::string>& v) {
  return v ? showValue(*v) : std::string("(unset)");
}
std::string showValue(std::chrono::milliseconds v) { return std::to_string(v.count()) + " ms"; }
std::string showValue(std::chrono::hours v) { return std::to_string(v.count()) + " h"; }
std::string showValue(const std::vector<Config::AlertSinkConfig>& v) {
  std::string out;
  for (const auto& s : v) {
    out += (out.empty() ? "" : ", ") + s.name;
    if (s.http()) out += " (" + s.url + ")";
  }
  return out.empty() ? "none" : out;
}
std::string showValue(const std::vector<ObjectType>& v) {
  std::string out = "[";
  for (const auto type : v) out += (out.size() > 1 ? ", " : "") + waitTypeKey(type);
  return out + "]";
}
std::string showValue(const std::vector<std::string>& v) {
  std::string out = "[";
  for (const auto& item : v) out += (out.size() > 1 ? ", " : "") + item;
  return out + "]";
}
std::string showValue(const Config::ServiceSelection& v) {
  return v.all ? std::string("all") : showValue(v.names);
}
std::string showValue(const std::vector<TargetConfig>& v) {
  return std::to_string(v.size()) + " target(s)";
}

/// A key held directly by Config (state_dir, targets).
template <auto Field>
constexpr ConfigKey topKey(std::string_view name, KeyChange change, std::string_view why = {}) {
  return {name,
          change,
          why,
          [](const Config& a, const Config& b) { return a.*Field == b.*Field; },
          [](Config& to, const Config& from) { to.*Field = from.*Field; },
          [](const Config& c) { return showValue(c.*Field); }};
}

/// A key of one of Config's groups (sampling.threads).
template <auto Group, auto Field>
constexpr ConfigKey key(std::string_view name, KeyChange change, std::string_view why = {}) {
  return {name,
          change,
          why,
          [](const Config& a, const Config& b) { return a.*Group.*Field == b.*Group.*Field; },
          [](Config& to, const Config& from) { to.*Group.*Field = from.*Group.*Field; },
          [](const Config& c) { return showValue(c.*Group.*Field); }};
}

/// A key of a part of one of Config's groups (detection.busy.cpu_percent).
template <auto Group, auto Part, auto Field>
constexpr ConfigKey subKey(std::string_view name, KeyChange change, std::string_view why = {}) {
  return {name,
          change,
          why,
          [](const Config& a, const Config& b) {
            return a.*Group.*Part.*Field == b.*Group.*Part.*Field;
          },
          [](Config& to, const Config& from) { to.*Group.*Part.*Field = from.*Group.*Part.*Field; },
          [](const Config& c) { return showValue(c.*Group.*Part.*Field); }};
}

constexpr std::string_view kApiAtStart = "the API's listeners, tokens and TLS are set up at start";
constexpr std::string_view kMetricsAtStart = "the metrics endpoint is bound at start";

constexpr auto kLive = KeyChange::kLive;
constexpr auto kRestart = KeyChange::kRestart;

// The one place that says how each key changes. Live keys reach the monitor (thresholds, capture,
// retention, alert limits, targets: Monitor::reconfigure), the scheduler (intervals and deadline:
// Scheduler::setOptions, and each process's interval through its target), the symptom watchers
// (the services watched, their interval and the window threshold: SymptomWatchers::reconfigure),
// the alert route
// (chosen again at every reload) and the log (level, and the sinks re-opened).
using C = Config;
constexpr std::array kKeys{
    topKey<&C::state_dir>("state_dir", kRestart,
                          "the store and the log file stay open where the service started"),
    key<&C::sampling, &C::Sampling::interval>("sampling.interval_ms", kLive),
    key<&C::sampling, &C::Sampling::threads>("sampling.threads", kRestart,
                                             "the worker pool is sized at start"),
    key<&C::sampling, &C::Sampling::deadline>("sampling.deadline_ms", kLive),
    key<&C::sampling, &C::Sampling::discovery_interval>("sampling.discovery_interval_ms", kLive),
    key<&C::detection, &C::Detection::hang_threshold>("detection.hang_threshold_ms", kLive),
    key<&C::detection, &C::Detection::ignore_waits>("detection.ignore_waits", kLive),
    subKey<&C::detection, &C::Detection::busy, &BusyConfig::enabled>("detection.busy.enabled",
                                                                     kLive),
    subKey<&C::detection, &C::Detection::busy, &BusyConfig::cpu_percent>(
        "detection.busy.cpu_percent", kLive),
    subKey<&C::detection, &C::Detection::busy, &BusyConfig::threshold>(
        "detection.busy.threshold_ms", kLive),
    key<&C::detection, &C::Detection::window_hung>("detection.window_hung_ms", kLive),
    key<&C::services, &C::Services::watch>("services.watch", kLive),
    key<&C::services, &C::Services::interval>("services.interval_ms", kLive),
    key<&C::services, &C::Services::no_hint_wait>("services.no_hint_wait_ms", kLive),
    key<&C::capture, &C::Capture::enabled>("capture.enabled", kLive),
    key<&C::capture, &C::Capture::min_interval>("capture.min_interval_ms", kLive),
    key<&C::capture, &C::Capture::dump>("capture.dump", kLive),
    key<&C::capture, &C::Capture::dump_max_mb>("capture.dump_max_mb", kLive),
    key<&C::capture, &C::Capture::dumps_max_total_mb>("capture.dumps_max_total_mb", kLive),
    key<&C::capture, &C::Capture::dump_full_memory>("capture.dump_full_memory", kLive),
    key<&C::retention, &C::Retention::max_age>("retention.max_age_hours", kLive),
    key<&C::retention, &C::Retention::max_incidents>("retention.max_incidents", kLive),
    key<&C::alerts, &C::Alerts::sinks>("alerts.sinks", kLive),
    key<&C::alerts, &C::Alerts::window>("alerts.window_ms", kLive),
    key<&C::alerts, &C::Alerts::max_per_window>("alerts.max_per_window", kLive),
    key<&C::log, &C::Log::level>("log.level", kLive),
    key<&C::log, &C::Log::file>("log.file", kLive),
    key<&C::log, &C::Log::max_file_bytes>("log.max_file_bytes", kLive),
    key<&C::log, &C::Log::max_files>("log.max_files", kLive),
    key<&C::log, &C::Log::queue_size>("log.queue_size", kRestart,
                                      "the log queue is allocated at start"),
    key<&C::log, &C::Log::console>("log.console", kLive),
    key<&C::api, &C::Api::enabled>("api.enabled", kRestart, kApiAtStart),
    key<&C::api, &C::Api::listen>("api.listen", kRestart, kApiAtStart),
    key<&C::api, &C::Api::admin_token_file>("api.admin_token_file", kRestart, kApiAtStart),
    key<&C::api, &C::Api::reader_token_file>("api.reader_token_file", kRestart, kApiAtStart),
    key<&C::api, &C::Api::group>("api.group", kRestart, kApiAtStart),
    key<&C::api, &C::Api::tls_cert_file>("api.tls.cert_file", kRestart, kApiAtStart),
    key<&C::api, &C::Api::tls_key_file>("api.tls.key_file", kRestart, kApiAtStart),
    key<&C::api, &C::Api::tls_client_ca_file>("api.tls.client_ca_file", kRestart, kApiAtStart),
    key<&C::api, &C::Api::watch_queue>("api.watch_queue", kRestart, kApiAtStart),
    key<&C::metrics, &C::Metrics::enabled>("metrics.enabled", kRestart, kMetricsAtStart),
    key<&C::metrics, &C::Metrics::listen>("metrics.listen", kRestart, kMetricsAtStart),
    topKey<&C::targets>("targets", kLive),
};

}  // namespace

std::span<const ConfigKey> configKeys() { return kKeys; }

ReloadPlan planReload(const Config& running, const Config& loaded) {
  ReloadPlan plan{.next = loaded, .live = {}, .restart = {}};
  for (const auto& k : kKeys) {
    if (k.same(running, loaded)) continue;
    if (k.change == KeyChange::kLive) {
      plan.live.push_back(&k);
    } else {
      plan.restart.push_back(&k);
      k.copy(plan.next, running);
    }
  }
  return plan;
}

bool containsKey(const std::vector<const ConfigKey*>& keys, std::string_view name) {
  return std::any_of(keys.begin(), keys.end(), [&](const ConfigKey* k) { return k->name == name; });
}

}  // namespace wctmon::app
