#include "core/config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "model/enum_names.h"

namespace wctmon {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxMs = 24LL * 3600 * 1000;

std::string typeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a fractional number";
    default:
      return "a number";
  }
}

/// Reads one JSON object, checking types and ranges, collecting every error with its pointer.
/// `key` as a JSON pointer's reference token: ~ -> ~0, / -> ~1.
std::string pointerToken(std::string_view key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

/// Parses `text`, refusing a key given twice in one object: JSON parsers keep one of them
/// silently (nlohmann the last), so a second "targets" would replace the first unseen. Throws
/// json::exception for text that is not JSON (parse_error) or holds a number no double can
/// hold (out_of_range).
json parseWithoutDuplicateKeys(std::string_view text, std::vector<ConfigError>& errors) {
  struct Container {
    bool object = false;
    std::vector<std::string> keys;
    std::size_t next_index = 0;
    std::string pointer;
  };
  std::vector<Container> open;
  // The pointer of the value that starts now: the last key of an object, the next index of an
  // array.
  const auto element = [&]() -> std::string {
    if (open.empty()) return "";
    const auto& parent = open.back();
    return parent.pointer + "/" +
           (parent.object ? pointerToken(parent.keys.back()) : std::to_string(parent.next_index));
  };
  const auto completed = [&] {
    if (!open.empty() && !open.back().object) ++open.back().next_index;
  };
  const json::parser_callback_t callback = [&](int /*depth*/, json::parse_event_t event,
                                               json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open.push_back({event == json::parse_event_t::object_start, {}, 0, element()});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        completed();
        break;
      case json::parse_event_t::key: {
        auto& keys = open.back().keys;
        auto key = parsed.get<std::string>();
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
          errors.push_back(ConfigError{open.back().pointer + "/" + pointerToken(key),
                                       "given twice in one object: only one would count"});
        }
        keys.push_back(std::move(key));
        break;
      }
      case json::parse_event_t::value:
        completed();
        break;
    }
    return true;
  };
  return json::parse(text, callback);
}

class ObjectReader {
 public:
  ObjectReader(const json& j, std::string pointer, std::vector<ConfigError>& errors)
      : json_(j), pointer_(std::move(pointer)), errors_(errors) {
    ok_ = j.is_object();
    if (!ok_) fail(pointer_, "must be an object, not " + typeName(j));
  }

  /// Reports keys nobody asked for: in a configuration they are typos.
  ~ObjectReader() {
    if (!ok_) return;
    for (const auto& [key, value] : json_.items()) {
      if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
        fail(child(key), "unknown key");
      }
    }
  }
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] std::string child(std::string_view key) const {
    return pointer_ + "/" + pointerToken(key);
  }

  /// The value at `key`, or nullptr when absent (absent means "the default").
  const json* find(std::string_view key) {
    known_.emplace_back(key);
    if (!ok_) return nullptr;
    auto it = json_.find(std::string(key));
    return it == json_.end() ? nullptr : &*it;
  }

  void integer(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_number()) {
      fail(child(key), "must be an integer, not " + typeName(*v));
      return;
    }
    const std::string expected =
        "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
    // JSON reads 1e3 and 1000.0 as fractional numbers, and integers beyond 64 bits too: all are
    // refused, saying what is allowed rather than what the parser made of them.
    if (v->is_number_float()) {
      const double value = v->get<double>();
      const bool whole_in_range = std::trunc(value) == value && value >= static_cast<double>(min) &&
                                  value <= static_cast<double>(max);
      fail(child(key), expected +
                           (whole_in_range ? ", written without a fraction or exponent" : "") +
                           " (got " + v->dump() + ")");
      return;
    }
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(child(key), expected + " (got " + v->dump() + ")");
      return;
    }
    const auto value = v->get<std::int64_t>();
    if (value < min || value > max) {
      fail(child(key), expected + " (got " + std::to_string(value) + ")");
      return;
    }
    out = value;
  }

  template <typename T>
  void unsignedValue(std::string_view key, T& out, std::int64_t min, std::int64_t max) {
    std::int64_t value = static_cast<std::int64_t>(out);
    integer(key, value, min, max);
    out = static_cast<T>(value);
  }

  void milliseconds(std::string_view key, std::chrono::milliseconds& out, std::int64_t min,
                    std::int64_t max = kMaxMs) {
    std::int64_t value = out.count();
    integer(key, value, min, max);
    out = std::chrono::milliseconds(value);
  }

  void boolean(std::string_view key, bool& out) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_boolean()) {
      fail(child(key), "must be true or false, not " + typeName(*v));
      return;
    }
    out = v->get<bool>();
  }

  bool string(std::string_view key, std::string& out, bool allow_empty = false) {
    const json* v = find(key);
    if (v == nullptr) return false;
    if (!v->is_string()) {
      fail(child(key), "must be a string, not " + typeName(*v));
      return false;
    }
    auto value = v->get<std::string>();
    if (value.empty() && !allow_empty) {
      fail(child(key), "must not be empty");
      return false;
    }
    // A NUL ends the string for every system call it reaches (a path would be cut short).
    if (value.find('\0') != std::string::npos) {
      fail(child(key), "must not contain a NUL character (\\u0000)");
      return false;
    }
    out = std::move(value);
    return true;
  }

  void choice(std::string_view key, std::string& out, const std::vector<std::string>& allowed) {
    std::string value = out;
    if (!string(key, value)) return;
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(child(key), "must be one of " + list + " (got \"" + value + "\")");
      return;
    }
    out = value;
  }

  void waitTypes(std::string_view key, std::vector<ObjectType>& out) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array()) {
      fail(child(key), "must be an array of wait types, not " + typeName(*v));
      return;
    }
    std::vector<ObjectType> types;
    for (std::size_t i = 0; i < v->size(); ++i) {
      const auto& item = (*v)[i];
      const std::string where = child(key) + "/" + std::to_string(i);
      if (!item.is_string()) {
        fail(where, "must be a wait type name, not " + typeName(item));
        continue;
      }
      auto type = waitTypeFromKey(item.get<std::string>());
      if (!type || *type == ObjectType::kThread) {
        fail(where, "unknown wait type \"" + item.get<std::string>() + "\"");
        continue;
      }
      if (std::find(types.begin(), types.end(), *type) != types.end()) {
        fail(where, "\"" + item.get<std::string>() + "\" is listed twice");
        continue;
      }
      types.push_back(*type);
    }
    out = std::move(types);
  }

  /// Where this reader reports problems (for a nested object's reader).
  [[nodiscard]] std::vector<ConfigError>& errors() { return errors_; }

  void fail(std::string pointer, std::string reason) {
    errors_.push_back(ConfigError{std::move(pointer), std::move(reason)});
  }

 private:
  const json& json_;
  std::string pointer_;
  std::vector<ConfigError>& errors_;
  std::vector<std::string> known_;
  bool ok_ = false;
};

/// alerts.sinks, a list of sinks ({"type": "journald", "queue": 1000}, or "journald" for short),
/// or alerts.sink, the one sink of earlier versions ("none": no alerts).
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
      if (*kind != AlertSinkKind::kNone) out.push_back({*kind});
    }
    return;
  }
  const json* list = r.find("sinks");
  if (list == nullptr) return;
  if (!list->is_array()) {
    r.fail(r.child("sinks"), "must be an array of sinks, not " + typeName(*list));
    return;
  }
  std::vector<Config::AlertSinkConfig> sinks;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& item = (*list)[i];
    const std::string where = r.child("sinks") + "/" + std::to_string(i);
    Config::AlertSinkConfig sink;
    std::string type;
    if (item.is_string()) {
      type = item.get<std::string>();
    } else {
      ObjectReader s(item, where, r.errors());
      if (!s.ok()) continue;
      s.unsignedValue("queue", sink.queue, 1, 1'000'000);
      if (!s.string("type", type)) {
        if (!item.contains("type")) s.fail(where, "needs a type: journald, syslog or eventlog");
        continue;
      }
    }
    const auto kind = alertSinkFromName(type);
    if (!kind || *kind == AlertSinkKind::kNone) {
      r.fail(where, "unknown alert sink type \"" + type + "\" (journald, syslog or eventlog)");
      continue;
    }
    sink.type = *kind;
    if (std::any_of(sinks.begin(), sinks.end(), [&](const auto& s) { return s.type == *kind; })) {
      r.fail(where, "the sink " + type + " is listed twice");
      continue;
    }
    sinks.push_back(sink);
  }
  out = std::move(sinks);
}

void readTarget(const json& j, const std::string& pointer, const Config& defaults,
                TargetConfig& target, std::vector<ConfigError>& errors) {
  ObjectReader r(j, pointer, errors);
  if (!r.ok()) return;
  target.interval = defaults.sampling.interval;
  target.hang_threshold = defaults.detection.hang_threshold;
  target.ignore_waits = defaults.detection.ignore_waits;
  target.capture = defaults.capture.enabled;

  r.string("name", target.name);
  std::string exe;
  if (r.string("exe", exe)) target.exe = exe;
  std::string cmdline;
  // A selector that is present but wrong has its own error; "needs a selector" would be noise.
  const bool selector_given = j.contains("exe") || j.contains("cmdline") || j.contains("pid");
  if (r.string("cmdline", cmdline)) {
    try {
      std::regex compiled(cmdline, std::regex::ECMAScript);
      target.cmdline = cmdline;
    } catch (const std::regex_error& e) {
      r.fail(r.child("cmdline"), std::string("not a valid regular expression: ") + e.what());
    }
  }
  std::int64_t pid = 0;
  r.integer("pid", pid, 1, 0x7fffffff);
  if (pid > 0) target.pid = Pid{static_cast<std::int32_t>(pid)};
  r.boolean("all", target.all);
  r.milliseconds("interval_ms", target.interval, 10);
  r.milliseconds("hang_threshold_ms", target.hang_threshold, 100);
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
  r.waitTypes("ignore_waits", target.ignore_waits);

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

/// The 16 bytes of an IPv6 literal without brackets ("::1", "fe80::1"); nullopt when it is none.
/// Embedded IPv4 forms ("::ffff:1.2.3.4") are not accepted.
std::optional<std::array<std::uint16_t, 8>> parseIpv6(std::string_view text) {
  std::array<std::uint16_t, 8> out{};
  std::vector<std::uint16_t> head;
  std::vector<std::uint16_t> tail;
  bool gap = false;
  const auto groups = [](std::string_view part, std::vector<std::uint16_t>& into) {
    if (part.empty()) return true;
    std::size_t start = 0;
    while (true) {
      const auto end = part.find(':', start);
      const auto group = part.substr(start, end == std::string_view::npos ? end : end - start);
      if (group.empty() || group.size() > 4) return false;
      unsigned value = 0;
      for (char ch : group) {
        const int digit = std::isdigit(static_cast<unsigned char>(ch))    ? ch - '0'
                          : std::isxdigit(static_cast<unsigned char>(ch)) ? (ch | 0x20) - 'a' + 10
                                                                          : -1;
        if (digit < 0) return false;
        value = value * 16 + static_cast<unsigned>(digit);
      }
      into.push_back(static_cast<std::uint16_t>(value));
      if (end == std::string_view::npos) return true;
      start = end + 1;
    }
  };
  if (const auto at = text.find("::"); at != std::string_view::npos) {
    gap = true;
    if (!groups(text.substr(0, at), head) || !groups(text.substr(at + 2), tail)) {
      return std::nullopt;
    }
  } else if (!groups(text, head)) {
    return std::nullopt;
  }
  const std::size_t n = head.size() + tail.size();
  if ((gap && n > 7) || (!gap && n != 8)) return std::nullopt;
  std::copy(head.begin(), head.end(), out.begin());
  std::copy(tail.begin(), tail.end(), out.end() - static_cast<std::ptrdiff_t>(tail.size()));
  return out;
}

/// The four bytes of a dotted IPv4 literal; nullopt when it is none.
std::optional<std::array<int, 4>> parseIpv4(std::string_view text) {
  std::array<int, 4> out{};
  std::size_t start = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto end = text.find('.', start);
    if ((i < 3) == (end == std::string_view::npos)) return std::nullopt;
    const auto part = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty() || part.size() > 3 || !std::all_of(part.begin(), part.end(), [](char ch) {
          return std::isdigit(static_cast<unsigned char>(ch));
        })) {
      return std::nullopt;
    }
    out[i] = std::stoi(std::string(part));
    if (out[i] > 255) return std::nullopt;
    start = end + 1;
  }
  return out;
}

/// Reads the api section; a listener that is not loopback needs TLS.
void readApi(ObjectReader& r, Config::Api& api) {
  r.boolean("enabled", api.enabled);
  if (const json* l = r.find("listen")) {
    const std::string pointer = r.child("listen");
    if (!l->is_array()) {
      r.fail(pointer, "must be an array of addresses, not " + typeName(*l));
    } else {
      api.listen.clear();
      for (std::size_t i = 0; i < l->size(); ++i) {
        const auto& item = (*l)[i];
        const std::string at = pointer + "/" + std::to_string(i);
        if (!item.is_string()) {
          r.fail(at,
                 "must be a string such as \"unix:/run/wctmon/api.sock\" or "
                 "\"127.0.0.1:7787\", not " +
                     typeName(item));
          continue;
        }
        std::string why;
        if (!parseListenAddress(item.get<std::string>(), why)) {
          r.fail(at, why);
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
    std::string why;
    const auto address = parseListenAddress(api.listen[i], why);
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
    r.milliseconds("interval_ms", c.sampling.interval, 10);
    r.unsignedValue("threads", c.sampling.threads, 0, 256);
    r.milliseconds("deadline_ms", c.sampling.deadline, 0);
    r.milliseconds("discovery_interval_ms", c.sampling.discovery_interval, 0);
  }
  if (const json* d = root.find("detection")) {
    ObjectReader r(*d, "/detection", errors);
    r.milliseconds("hang_threshold_ms", c.detection.hang_threshold, 100);
    r.waitTypes("ignore_waits", c.detection.ignore_waits);
  }
  if (const json* cap = root.find("capture")) {
    ObjectReader r(*cap, "/capture", errors);
    r.boolean("enabled", c.capture.enabled);
    r.milliseconds("min_interval_ms", c.capture.min_interval, 0);
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
    r.milliseconds("window_ms", c.alerts.window, 1000);
    r.unsignedValue("max_per_window", c.alerts.max_per_window, 1, 100000);
  }
  if (const json* l = root.find("log")) {
    ObjectReader r(*l, "/log", errors);
    r.choice("level", c.log.level, {"trace", "debug", "info", "warn", "error", "critical", "off"});
    if (r.string("file", c.log.file, true)) {
      // Relative to state_dir, and inside it: the service may write nowhere else (systemd's
      // unit makes only the state directory writable).
      const auto file = std::filesystem::path(std::u8string(c.log.file.begin(), c.log.file.end()))
                            .lexically_normal();
      if (file.has_root_path() || file.has_root_name() ||
          (!file.empty() && *file.begin() == "..")) {
        r.fail("/log/file", "must be a file under state_dir (got \"" + c.log.file + "\")");
      }
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
        std::string why;
        const auto address = parseListenAddress(c.metrics.listen, why);
        if (!address) {
          r.fail(r.child("listen"), why);
        } else if (!address->unix_path.empty()) {
          r.fail(r.child("listen"), "metrics are served over HTTP: give IPV4:PORT or [IPV6]:PORT");
        }
      }
    }
  }
  if (const json* t = root.find("targets")) {
    if (!t->is_array()) {
      root.fail("/targets", "must be an array of targets, not " + typeName(*t));
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

bool ListenAddress::isLocal() const {
  if (isUnix()) return true;
  if (const auto v4 = parseIpv4(host)) return (*v4)[0] == 127;
  const auto v6 = parseIpv6(host);
  return v6 && *v6 == std::array<std::uint16_t, 8>{0, 0, 0, 0, 0, 0, 0, 1};
}

std::optional<ListenAddress> parseListenAddress(std::string_view text, std::string& why) {
  ListenAddress out;
  if (text.starts_with("unix:")) {
    const auto path = text.substr(5);
    if (path.empty() || path.front() != '/') {
      why = "a Unix socket needs an absolute path (\"unix:/run/wctmon/api.sock\"), got \"" +
            std::string(text) + "\"";
      return std::nullopt;
    }
    // sun_path holds 108 bytes with its terminating zero.
    if (path.size() > 107) {
      why = "the Unix socket path is longer than the 107 bytes a socket address holds";
      return std::nullopt;
    }
    out.unix_path = std::string(path);
    return out;
  }
  const auto colon = text.rfind(':');
  const auto bad = [&](const std::string& reason) {
    why = "\"" + std::string(text) + "\": " + reason +
          " (expected \"unix:/PATH\", \"IPV4:PORT\" or \"[IPV6]:PORT\")";
    return std::nullopt;
  };
  if (colon == std::string_view::npos) return bad("no port");
  const auto port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(),
                   [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) ||
      std::stoi(std::string(port)) > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  out.port = std::stoi(std::string(port));
  auto host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (!parseIpv6(host)) return bad("not an IPv6 address");
  } else if (!parseIpv4(host)) {
    return bad("the host must be an IP address (an IPv6 one in brackets)");
  }
  out.host = std::string(host);
  return out;
}

std::string_view alertSinkName(AlertSinkKind kind) {
  switch (kind) {
    case AlertSinkKind::kJournald:
      return "journald";
    case AlertSinkKind::kSyslog:
      return "syslog";
    case AlertSinkKind::kEventLog:
      return "eventlog";
    case AlertSinkKind::kNone:
      break;
  }
  return "none";
}

std::optional<AlertSinkKind> alertSinkFromName(std::string_view name) {
  for (const auto kind : {AlertSinkKind::kJournald, AlertSinkKind::kSyslog,
                          AlertSinkKind::kEventLog, AlertSinkKind::kNone}) {
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

ConfigParse parseConfig(std::string_view json_text) {
  ConfigParse out;
  json j;
  try {
    j = parseWithoutDuplicateKeys(json_text, out.errors);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 8e400
    out.errors.push_back(ConfigError{"", std::string("not valid JSON: ") + e.what()});
    return out;
  }
  Config config;
  config.detection.ignore_waits = defaultIgnoredWaits();
  readConfig(j, config, out.errors);
  if (out.errors.empty()) out.config = std::move(config);
  return out;
}

ConfigParse loadConfig(const std::filesystem::path& path) {
  const auto unreadable = [&](int error) {
    ConfigParse out;
    out.errors.push_back(ConfigError{
        "", "cannot read " + path.string() + ": " + std::generic_category().message(error), true});
    return out;
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

std::optional<TargetConfig> parseTarget(std::string_view json_text, const Config& defaults,
                                        std::vector<ConfigError>& errors) {
  json j;
  const auto before = errors.size();
  try {
    j = parseWithoutDuplicateKeys(json_text, errors);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 8e400
    errors.push_back(ConfigError{"", std::string("not valid JSON: ") + e.what()});
    return std::nullopt;
  }
  TargetConfig target;
  readTarget(j, "", defaults, target, errors);
  if (errors.size() != before) return std::nullopt;
  return target;
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
  return j.dump();
}

}  // namespace wctmon
