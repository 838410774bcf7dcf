// The configuration: its schema (config/wctmon.schema.json) read into a validated Config
// through the strict JSON reader (strict_json.h), the checks that span keys (a listener that is
// not loopback needs TLS, a log file stays under state_dir), the file's loading, and the targets
// the API adds, which take the same shape.
#include "core/config.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "core/cmdline_pattern.h"
#include "core/listen_address.h"
#include "core/probe_config_json.h"
#include "core/strict_json.h"
#include "model/enum_names.h"
#include "model/format.h"

namespace wctmon {
namespace {

using nlohmann::json;

/// The longest duration a key of the configuration takes: a day.
constexpr std::int64_t kMaxMs = 24LL * 3600 * 1000;

/// A list of wait type names, each known and listed once.
void readWaitTypes(ObjectReader& r, std::string_view key, std::vector<ObjectType>& out) {
  const json* v = r.find(key);
  if (v == nullptr) return;
  if (!v->is_array()) {
    r.fail(r.child(key), "must be an array of wait types, not " + jsonTypeName(*v));
    return;
  }
  std::vector<ObjectType> types;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& item = (*v)[i];
    const std::string where = r.child(key) + "/" + std::to_string(i);
    if (!item.is_string()) {
      r.fail(where, "must be a wait type name, not " + jsonTypeName(item));
      continue;
    }
    auto type = waitTypeFromKey(item.get<std::string>());
    if (!type || *type == ObjectType::kThread) {
      r.fail(where, "unknown wait type \"" + item.get<std::string>() + "\"");
      continue;
    }
    if (std::find(types.begin(), types.end(), *type) != types.end()) {
      r.fail(where, "\"" + item.get<std::string>() + "\" is listed twice");
      continue;
    }
    types.push_back(*type);
  }
  out = std::move(types);
}

/// The keys of an HTTP sink ({"type": "webhook", "url": ...}) beyond type and queue; whether
/// they were all right.
bool readHttpSink(ObjectReader& s, const std::string& where, Config::AlertSinkConfig& sink) {
  const auto errors = s.errors().size();
  if (!s.string("url", sink.url)) {
    if (s.find("url") == nullptr) {
      s.fail(where, "a sink of type " + std::string(alertSinkName(sink.type)) + " needs a url");
    }
  } else if (const auto url = parseHttpUrl(sink.url); !url) {
    s.fail(s.child("url"), url.error().message);
  }
  s.string("name", sink.name);
  s.string("token_file", sink.token_file);
  s.string("ca_file", sink.ca_file);
  s.milliseconds("retry_for_ms", sink.retry_for, 0, 7 * 24 * 3600 * 1000LL);
  s.milliseconds("timeout_ms", sink.timeout, 100, 120000);
  return s.errors().size() == errors;
}

/// alerts.sinks, a list of sinks ({"type": "journald", "queue": 1000}, "journald" for short, or
/// an HTTP receiver {"type": "alertmanager", "url": "http://host:9093"}), or alerts.sink, the one
/// sink of earlier versions ("none": no alerts).
void readAlertSinks(ObjectReader& r, std::vector<Config::AlertSinkConfig>& out) {
  const bool listed = r.find("sinks") != nullptr;
  std::string single;
  if (r.string("sink", single)) {
    if (listed) {
      r.fail(r.child("sink"), "give alerts.sinks or alerts.sink (its one-sink form), not both");
      return;
    }
    r.choice("sink", single, {"journald", "syslog", "eventlog", "none"});
    if (const auto kind = alertSinkFromName(single)) {
      out.clear();
      if (*kind != AlertSinkKind::kNone) out.push_back(Config::AlertSinkConfig::systemLog(*kind));
    }
    return;
  }
  const json* list = r.find("sinks");
  if (list == nullptr) return;
  if (!list->is_array()) {
    r.fail(r.child("sinks"), "must be an array of sinks, not " + jsonTypeName(*list));
    return;
  }
  constexpr std::string_view kTypes = "journald, syslog, eventlog, alertmanager or webhook";
  std::vector<Config::AlertSinkConfig> sinks;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& item = (*list)[i];
    const std::string where = r.child("sinks") + "/" + std::to_string(i);
    Config::AlertSinkConfig sink;
    std::string type;
    std::optional<ObjectReader> s;
    if (item.is_string()) {
      type = item.get<std::string>();
    } else {
      s.emplace(item, where, r.errors());
      if (!s->ok()) continue;
      s->unsignedValue("queue", sink.queue, 1, 1'000'000);
      if (!s->string("type", type)) {
        if (!item.contains("type")) s->fail(where, "needs a type: " + std::string(kTypes));
        continue;
      }
    }
    const auto kind = alertSinkFromName(type);
    if (!kind || *kind == AlertSinkKind::kNone) {
      r.fail(where, "unknown alert sink type \"" + type + "\" (" + std::string(kTypes) + ")");
      continue;
    }
    sink.type = *kind;
    if (sink.http()) {
      if (!s) {
        r.fail(where, "a sink of type " + type + " is an object with its url: {\"type\": \"" +
                          type + "\", \"url\": \"http://...\"}");
        continue;
      }
      // One that is wrong is not kept: a second of its type would read as a duplicate.
      if (!readHttpSink(*s, where, sink)) continue;
    }
    if (sink.name.empty()) sink.name = type;
    if (std::any_of(sinks.begin(), sinks.end(),
                    [&](const auto& o) { return o.name == sink.name; })) {
      r.fail(where, "the sink " + sink.name + " is listed twice" +
                        (sink.http() ? " (give each its own \"name\")" : ""));
      continue;
    }
    sinks.push_back(sink);
  }
  out = std::move(sinks);
}

void readBusy(ObjectReader& parent, BusyConfig& busy) {
  const json* b = parent.find("busy");
  if (b == nullptr) return;
  ObjectReader r(*b, parent.child("busy"), parent.errors());
  if (!r.ok()) return;
  r.boolean("enabled", busy.enabled);
  r.unsignedValue("cpu_percent", busy.cpu_percent, 10, 100);
  r.milliseconds("threshold_ms", busy.threshold, 1000, kMaxMs);
}

/// The longest name the service control manager takes for a service (its key name).
constexpr std::size_t kMaxServiceName = 256;

/// services.watch: "all", or a list of service key names, each once (without regard to case,
/// as the service control manager compares them).
void readServiceSelection(ObjectReader& r, Config::ServiceSelection& out) {
  const json* v = r.find("watch");
  if (v == nullptr) return;
  const std::string pointer = r.child("watch");
  if (v->is_string()) {
    if (v->get<std::string>() != "all") {
      r.fail(pointer, "must be \"all\" or an array of service names (got \"" +
                          v->get<std::string>() + "\")");
      return;
    }
    out = {.all = true, .names = {}};
    return;
  }
  if (!v->is_array()) {
    r.fail(pointer, "must be \"all\" or an array of service names, not " + jsonTypeName(*v));
    return;
  }
  Config::ServiceSelection selection;
  std::vector<std::string> folded;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& item = (*v)[i];
    const std::string where = pointer + "/" + std::to_string(i);
    if (!item.is_string()) {
      r.fail(where, "must be a service name, not " + jsonTypeName(item));
      continue;
    }
    const auto name = item.get<std::string>();
    // The SCM refuses these in a service name: a name with them could never match.
    if (name.empty() || name.size() > kMaxServiceName ||
        name.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos) {
      r.fail(where, "must be a service key name of 1 to 256 characters without / or \\ (got \"" +
                        name + "\")");
      continue;
    }
    const auto lower = asciiLower(name);
    if (std::find(folded.begin(), folded.end(), lower) != folded.end()) {
      r.fail(where, "\"" + name + "\" is listed twice (service names do not differ by case)");
      continue;
    }
    folded.push_back(std::move(lower));
    selection.names.push_back(name);
  }
  out = std::move(selection);
}

void readTarget(const json& j, const std::string& pointer, const Config& defaults,
                TargetConfig& target, std::vector<ConfigError>& errors) {
  ObjectReader r(j, pointer, errors);
  if (!r.ok()) return;
  target.interval = defaults.sampling.interval;
  target.hang_threshold = defaults.detection.hang_threshold;
  target.ignore_waits = defaults.detection.ignore_waits;
  target.capture = defaults.capture.enabled;
  target.busy = defaults.detection.busy;

  r.string("name", target.name);
  std::string exe;
  if (r.string("exe", exe)) target.exe = exe;
  std::string cmdline;
  // A selector that is present but wrong has its own error; "needs a selector" would be noise.
  const bool selector_given = j.contains("exe") || j.contains("cmdline") || j.contains("pid");
  if (r.string("cmdline", cmdline)) {
    if (auto compiled = CmdlinePattern::compile(cmdline); compiled) {
      target.cmdline = cmdline;
    } else {
      r.fail(r.child("cmdline"),
             "not a valid regular expression (RE2 syntax): " + compiled.error().message);
    }
  }
  std::int64_t pid = 0;
  r.integer("pid", pid, 1, 0x7fffffff);
  if (pid > 0) target.pid = Pid{static_cast<std::int32_t>(pid)};
  r.boolean("all", target.all);
  r.milliseconds("interval_ms", target.interval, 10, kMaxMs);
  r.milliseconds("hang_threshold_ms", target.hang_threshold, 100, kMaxMs);
  r.boolean("out_of_proc", target.out_of_proc);
  if (const json* wct = r.find("wct")) {
    ObjectReader flags(*wct, r.child("wct"), r.errors());
    if (flags.ok()) {
      flags.boolean("com", target.wct.com);
      flags.boolean("critical_sections", target.wct.critical_sections);
      flags.boolean("network_io", target.wct.network_io);
    }
  }
  r.boolean("capture", target.capture);
  readWaitTypes(r, "ignore_waits", target.ignore_waits);
  readBusy(r, target.busy);
  if (const json* probe = r.find("probe")) {
    ProbeConfig read;
    if (readProbe(*probe, r.child("probe"), read, r.errors())) target.probe = std::move(read);
  }

  const bool selector = target.exe || target.cmdline || target.pid;
  if (!selector_given && !target.all) {
    r.fail(pointer, "needs a selector: exe, cmdline, pid or \"all\": true");
  }
  if (selector && target.all)
    r.fail(r.child("all"), "\"all\" cannot be combined with exe, cmdline or pid");
  if (target.name.empty() && (selector || target.all)) {
    target.name = target.all   ? "all"
                  : target.pid ? "pid " + std::to_string(target.pid->value)
                  : target.exe ? *target.exe
                               : *target.cmdline;
  }
}

/// Reads the api section; a listener that is not loopback needs TLS.
void readApi(ObjectReader& r, Config::Api& api) {
  r.boolean("enabled", api.enabled);
  if (const json* l = r.find("listen")) {
    const std::string pointer = r.child("listen");
    if (!l->is_array()) {
      r.fail(pointer, "must be an array of addresses, not " + jsonTypeName(*l));
    } else {
      api.listen.clear();
      for (std::size_t i = 0; i < l->size(); ++i) {
        const auto& item = (*l)[i];
        const std::string at = pointer + "/" + std::to_string(i);
        if (!item.is_string()) {
          r.fail(at,
                 "must be a string such as \"unix:/run/wctmon/api.sock\" or "
                 "\"127.0.0.1:7787\", not " +
                     jsonTypeName(item));
          continue;
        }
        if (auto parsed = parseListenAddress(item.get<std::string>()); !parsed) {
          r.fail(at, parsed.error().message);
          continue;
        }
        api.listen.push_back(item.get<std::string>());
      }
    }
  }
  const auto path = [&](std::string_view key, std::filesystem::path& out) {
    std::string value = out.string();
    if (r.string(key, value, true)) out = value;
  };
  path("admin_token_file", api.admin_token_file);
  path("reader_token_file", api.reader_token_file);
  r.string("group", api.group, true);
  r.unsignedValue("watch_queue", api.watch_queue, 1, 1 << 20);
  if (const json* t = r.find("tls")) {
    ObjectReader tls(*t, r.child("tls"), r.errors());
    std::string cert = api.tls_cert_file.string();
    std::string key = api.tls_key_file.string();
    std::string ca = api.tls_client_ca_file.string();
    if (tls.string("cert_file", cert, true)) api.tls_cert_file = cert;
    if (tls.string("key_file", key, true)) api.tls_key_file = key;
    if (tls.string("client_ca_file", ca, true)) api.tls_client_ca_file = ca;
  }
  const bool tls = !api.tls_cert_file.empty() && !api.tls_key_file.empty();
  for (std::size_t i = 0; i < api.listen.size(); ++i) {
    const auto address = parseListenAddress(api.listen[i]);
    if (address && !address->isLocal() && !tls) {
      r.fail(r.child("listen") + "/" + std::to_string(i),
             "\"" + api.listen[i] +
                 "\" is not a loopback address: listening there needs TLS (api.tls.cert_file "
                 "and api.tls.key_file), or listen on a Unix socket, 127.0.0.1 or [::1]");
    }
  }
}

void readConfig(const json& j, Config& c, std::vector<ConfigError>& errors) {
  ObjectReader root(j, "", errors);
  if (!root.ok()) return;

  std::string state_dir;
  if (root.string("state_dir", state_dir)) {
    // UTF-8, whatever the system's narrow encoding; absolute as the platform means it
    // ("/var/lib/wctmon", "C:\\ProgramData\\wctmon").
    std::filesystem::path dir(std::u8string(state_dir.begin(), state_dir.end()));
    if (!dir.is_absolute()) {
      root.fail("/state_dir", "must be an absolute path (got \"" + state_dir + "\")");
    } else {
      c.state_dir = std::move(dir);
    }
  }
  if (const json* s = root.find("sampling")) {
    ObjectReader r(*s, "/sampling", errors);
    r.milliseconds("interval_ms", c.sampling.interval, 10, kMaxMs);
    r.unsignedValue("threads", c.sampling.threads, 0, 256);
    r.milliseconds("deadline_ms", c.sampling.deadline, 0, kMaxMs);
    r.milliseconds("discovery_interval_ms", c.sampling.discovery_interval, 0, kMaxMs);
  }
  if (const json* d = root.find("detection")) {
    ObjectReader r(*d, "/detection", errors);
    r.milliseconds("hang_threshold_ms", c.detection.hang_threshold, 100, kMaxMs);
    readWaitTypes(r, "ignore_waits", c.detection.ignore_waits);
    readBusy(r, c.detection.busy);
    r.milliseconds("window_hung_ms", c.detection.window_hung, 0, kMaxMs);
    // Each probe gives a window's thread a second to answer (WindowsWindowProber): a shorter
    // threshold could not be told apart from one slow answer.
    if (c.detection.window_hung.count() > 0 && c.detection.window_hung.count() < 1000) {
      r.fail(r.child("window_hung_ms"),
             "must be 0 (windows are not probed) or at least 1000 ms (got " +
                 std::to_string(c.detection.window_hung.count()) + ")");
    }
  }
  if (const json* sv = root.find("services")) {
    ObjectReader r(*sv, "/services", errors);
    if (r.ok()) {
      readServiceSelection(r, c.services.watch);
      r.milliseconds("interval_ms", c.services.interval, 100, kMaxMs);
      r.milliseconds("no_hint_wait_ms", c.services.no_hint_wait, 1000, kMaxMs);
    }
  }
  if (const json* cap = root.find("capture")) {
    ObjectReader r(*cap, "/capture", errors);
    r.boolean("enabled", c.capture.enabled);
    r.milliseconds("min_interval_ms", c.capture.min_interval, 0, kMaxMs);
    std::string dump(dumpPolicyName(c.capture.dump));
    r.choice("dump", dump, {"none", "deadlock", "incident"});
    for (const auto policy : {DumpPolicy::kNone, DumpPolicy::kDeadlock, DumpPolicy::kIncident}) {
      if (dump == dumpPolicyName(policy)) c.capture.dump = policy;
    }
    r.unsignedValue("dump_max_mb", c.capture.dump_max_mb, 1, 1ULL << 30);
    r.unsignedValue("dumps_max_total_mb", c.capture.dumps_max_total_mb, 1, 1ULL << 30);
    r.boolean("dump_full_memory", c.capture.dump_full_memory);
  }
  if (const json* ret = root.find("retention")) {
    ObjectReader r(*ret, "/retention", errors);
    std::int64_t hours = c.retention.max_age.count();
    r.integer("max_age_hours", hours, 1, 24LL * 365 * 10);
    c.retention.max_age = std::chrono::hours(hours);
    r.unsignedValue("max_incidents", c.retention.max_incidents, 1, 10'000'000);
  }
  if (const json* a = root.find("alerts")) {
    ObjectReader r(*a, "/alerts", errors);
    readAlertSinks(r, c.alerts.sinks);
    r.milliseconds("window_ms", c.alerts.window, 1000, kMaxMs);
    r.unsignedValue("max_per_window", c.alerts.max_per_window, 1, 100000);
  }
  if (const json* l = root.find("log")) {
    ObjectReader r(*l, "/log", errors);
    r.choice("level", c.log.level, {"trace", "debug", "info", "warn", "error", "critical", "off"});
    if (std::string name; r.string("file", name, true)) {
      // Relative to state_dir, and inside it: the service may write nowhere else (systemd's
      // unit makes only the state directory writable).
      const auto file =
          std::filesystem::path(std::u8string(name.begin(), name.end())).lexically_normal();
      if (file.has_root_path() || file.has_root_name() ||
          (!file.empty() && *file.begin() == "..")) {
        r.fail("/log/file", "must be a file under state_dir (got \"" + name + "\")");
      }
      c.log.file = std::move(name);
    }
    r.unsignedValue("max_file_bytes", c.log.max_file_bytes, 4096, 1LL << 40);
    r.unsignedValue("max_files", c.log.max_files, 1, 100);
    r.unsignedValue("queue_size", c.log.queue_size, 16, 1 << 20);
    r.boolean("console", c.log.console);
  }
  if (const json* a = root.find("api")) {
    ObjectReader r(*a, "/api", errors);
    if (r.ok()) readApi(r, c.api);
  }
  if (const json* m = root.find("metrics")) {
    ObjectReader r(*m, "/metrics", errors);
    if (r.ok()) {
      r.boolean("enabled", c.metrics.enabled);
      if (r.string("listen", c.metrics.listen, false)) {
        const auto address = parseListenAddress(c.metrics.listen);
        if (!address) {
          r.fail(r.child("listen"), address.error().message);
        } else if (!address->unix_path.empty()) {
          r.fail(r.child("listen"), "metrics are served over HTTP: give IPV4:PORT or [IPV6]:PORT");
        }
      }
    }
  }
  if (const json* t = root.find("targets")) {
    if (!t->is_array()) {
      root.fail("/targets", "must be an array of targets, not " + jsonTypeName(*t));
    } else {
      for (std::size_t i = 0; i < t->size(); ++i) {
        TargetConfig target;
        readTarget((*t)[i], "/targets/" + std::to_string(i), c, target, errors);
        c.targets.push_back(std::move(target));
      }
    }
  }
}

}  // namespace

Config::AlertSinkConfig Config::AlertSinkConfig::systemLog(AlertSinkKind kind) {
  AlertSinkConfig sink;
  sink.type = kind;
  sink.name = std::string(alertSinkName(kind));
  return sink;
}

std::string_view alertSinkName(AlertSinkKind kind) {
  switch (kind) {
    case AlertSinkKind::kJournald:
      return "journald";
    case AlertSinkKind::kSyslog:
      return "syslog";
    case AlertSinkKind::kEventLog:
      return "eventlog";
    case AlertSinkKind::kAlertmanager:
      return "alertmanager";
    case AlertSinkKind::kWebhook:
      return "webhook";
    case AlertSinkKind::kNone:
      break;
  }
  return "none";
}

std::optional<AlertSinkKind> alertSinkFromName(std::string_view name) {
  for (const auto kind :
       {AlertSinkKind::kJournald, AlertSinkKind::kSyslog, AlertSinkKind::kEventLog,
        AlertSinkKind::kAlertmanager, AlertSinkKind::kWebhook, AlertSinkKind::kNone}) {
    if (alertSinkName(kind) == name) return kind;
  }
  return std::nullopt;
}

std::vector<ObjectType> defaultIgnoredWaits() {
  // Long waits of these kinds are how idle programs look: event loops, worker pools parked on
  // condition variables, sleepers, servers waiting for a request, parents of long children.
  return {ObjectType::kFutex,      ObjectType::kCondition,   ObjectType::kPoll,
          ObjectType::kSignalWait, ObjectType::kSleep,       ObjectType::kEventfd,
          ObjectType::kSocketIo,   ObjectType::kUnixSocket,  ObjectType::kPipe,
          ObjectType::kThreadWait, ObjectType::kProcessWait, ObjectType::kUnknown};
}

std::string waitTypeKey(ObjectType type) { return std::string(configName(type)); }

std::optional<ObjectType> waitTypeFromKey(std::string_view key) {
  return fromConfigName<ObjectType>(key);
}

Result<Config, ConfigErrors> parseConfig(std::string_view json_text) {
  ConfigErrors errors;
  json j;
  try {
    j = parseWithoutDuplicateKeys(json_text, errors);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 8e400
    errors.push_back(ConfigError{"", std::string("not valid JSON: ") + e.what()});
    return errors;
  }
  Config config;
  config.detection.ignore_waits = defaultIgnoredWaits();
  readConfig(j, config, errors);
  if (!errors.empty()) return errors;
  return config;
}

Result<Config, ConfigErrors> loadConfig(const std::filesystem::path& path) {
  const auto unreadable = [&](int error) {
    return ConfigErrors{ConfigError{
        "", "cannot read " + path.string() + ": " + std::generic_category().message(error), true}};
  };
  // A directory opens as a stream on Linux and reads as nothing: "not valid JSON" would hide why.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return unreadable(EISDIR);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return unreadable(errno != 0 ? errno : EIO);
  std::string text;
  char block[16384];
  while (in.read(block, sizeof(block)) || in.gcount() > 0) {
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (in.eof()) break;
  }
  if (in.bad()) return unreadable(errno != 0 ? errno : EIO);
  return parseConfig(text);
}

Result<TargetConfig, ConfigErrors> parseTarget(std::string_view json_text, const Config& defaults) {
  ConfigErrors errors;
  json j;
  try {
    j = parseWithoutDuplicateKeys(json_text, errors);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 8e400
    errors.push_back(ConfigError{"", std::string("not valid JSON: ") + e.what()});
    return errors;
  }
  TargetConfig target;
  readTarget(j, "", defaults, target, errors);
  if (!errors.empty()) return errors;
  return target;
}

std::string_view dumpPolicyName(DumpPolicy policy) {
  switch (policy) {
    case DumpPolicy::kNone:
      return "none";
    case DumpPolicy::kDeadlock:
      return "deadlock";
    case DumpPolicy::kIncident:
      return "incident";
  }
  return "deadlock";
}

std::string targetToJson(const TargetConfig& target) {
  json j;
  j["name"] = target.name;
  if (target.exe) j["exe"] = *target.exe;
  if (target.cmdline) j["cmdline"] = *target.cmdline;
  if (target.pid) j["pid"] = target.pid->value;
  if (target.all) j["all"] = true;
  j["interval_ms"] = target.interval.count();
  j["hang_threshold_ms"] = target.hang_threshold.count();
  j["out_of_proc"] = target.out_of_proc;
  j["wct"] = {{"com", target.wct.com},
              {"critical_sections", target.wct.critical_sections},
              {"network_io", target.wct.network_io}};
  j["capture"] = target.capture;
  j["ignore_waits"] = json::array();
  for (const auto type : target.ignore_waits) j["ignore_waits"].push_back(waitTypeKey(type));
  j["busy"] = {{"enabled", target.busy.enabled},
               {"cpu_percent", target.busy.cpu_percent},
               {"threshold_ms", target.busy.threshold.count()}};
  if (target.probe) j["probe"] = probeToJson(*target.probe);
  return j.dump();
}

}  // namespace wctmon
