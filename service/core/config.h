#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_error.h"
#include "core/probe_config.h"
#include "model/ids.h"
#include "model/result.h"
#include "model/wait_model.h"

namespace wctmon {

/// Where the API listens unless the configuration says otherwise: on Linux a Unix socket in the
/// service's runtime directory and the loopback address on a fixed port; on Windows that address.
inline constexpr std::string_view kDefaultApiSocket = "unix:/run/wctmon/api.sock";
inline constexpr std::string_view kDefaultApiAddress = "127.0.0.1:7787";

/// Where alerts go: the system log of Linux (journald, or syslog) or of Windows (the Event Log).
/// The system logs, and the HTTP receivers: Prometheus Alertmanager (API v2) and any web hook.
enum class AlertSinkKind { kJournald, kSyslog, kEventLog, kAlertmanager, kWebhook, kNone };

/// What an unsaid configuration means where it differs between platforms. One definition per
/// platform, chosen by CMake (config_defaults_linux.cpp, config_defaults_windows.cpp).
struct PlatformDefaults {
  /// /var/lib/wctmon; %ProgramData%\wctmon.
  std::filesystem::path state_dir;
  std::vector<std::string> api_listen;
  /// journald; the Event Log.
  AlertSinkKind alert_sink = AlertSinkKind::kJournald;
};
[[nodiscard]] const PlatformDefaults& platformDefaults();
/// Where the Prometheus metrics are served unless the configuration says otherwise.
inline constexpr std::string_view kDefaultMetricsAddress = "127.0.0.1:7788";

/// What makes a busy thread (a spin, a livelock): a thread that uses at least `cpu_percent` of a
/// core for `threshold`, in the same few functions.
struct BusyConfig {
  bool enabled = true;
  unsigned cpu_percent = 95;
  std::chrono::milliseconds threshold{30000};
  friend bool operator==(const BusyConfig&, const BusyConfig&) = default;
};

/// One registered target: which processes, and how they are watched.
struct TargetConfig {
  /// A label for logs and alerts; defaults to the selector.
  std::string name;
  /// Executable name (comm or basename of exe) or a glob over it.
  std::optional<std::string> exe;
  /// Regular expression (RE2 syntax) searched in the command line (arguments joined by spaces),
  /// in its first 32 KiB.
  std::optional<std::string> cmdline;
  std::optional<Pid> pid;
  /// Every process of the system.
  bool all = false;
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds hang_threshold{30000};
  bool out_of_proc = false;
  /// With out_of_proc, WCT's further flags (Windows; no effect elsewhere).
  WctFlags wct{};
  bool capture = true;
  /// Waits that are normal when long (event loops, worker pools): never a hang.
  std::vector<ObjectType> ignore_waits;
  /// Asks from outside whether the target answers; a failing probe opens an unresponsive
  /// incident.
  std::optional<ProbeConfig> probe;
  /// Busy threads; defaults to detection.busy.
  BusyConfig busy;

  friend bool operator==(const TargetConfig&, const TargetConfig&) = default;
};

/// Which incidents get a dump of their process.
enum class DumpPolicy { kNone, kDeadlock, kIncident };
/// The policy as the configuration names it: "none", "deadlock", "incident".
[[nodiscard]] std::string_view dumpPolicyName(DumpPolicy policy);

/// The whole configuration, validated: every field holds a usable value.
struct Config {
  std::filesystem::path state_dir = platformDefaults().state_dir;

  struct Sampling {
    std::chrono::milliseconds interval{1000};
    /// Worker threads of the scheduler; 0 = one per core.
    unsigned threads = 0;
    /// How long one sample may take before it is abandoned; 0 = the target's interval.
    std::chrono::milliseconds deadline{0};
    /// How often the process list is scanned for new matches; 0 = the shortest interval.
    std::chrono::milliseconds discovery_interval{0};

    friend bool operator==(const Sampling&, const Sampling&) = default;
  } sampling;

  struct Detection {
    std::chrono::milliseconds hang_threshold{30000};
    std::vector<ObjectType> ignore_waits;
    BusyConfig busy;
    /// How long a top-level window of a watched process may leave messages unanswered before it
    /// is hung (Windows; ProcDump -h's 5 s); 0 = windows are not probed.
    std::chrono::milliseconds window_hung{5000};

    friend bool operator==(const Detection&, const Detection&) = default;
  } detection;

  /// Which Windows services are watched for being stuck in a pending state.
  struct ServiceSelection {
    /// Every service of the system.
    bool all = false;
    /// Service key names ("Spooler"), as given; matched without regard to case.
    std::vector<std::string> names;

    /// Whether any service is watched.
    [[nodiscard]] bool any() const { return all || !names.empty(); }
    friend bool operator==(const ServiceSelection&, const ServiceSelection&) = default;
  };

  /// Services stuck START_PENDING, STOP_PENDING, CONTINUE_PENDING or PAUSE_PENDING (Windows; the
  /// keys parse elsewhere and have no effect).
  struct Services {
    /// None by default: watching is opt-in.
    ServiceSelection watch;
    /// How often the service control manager is read.
    std::chrono::milliseconds interval{1000};
    /// How long a pending state whose wait hint is 0 may keep its checkpoint.
    std::chrono::milliseconds no_hint_wait{30000};

    friend bool operator==(const Services&, const Services&) = default;
  } services;

  struct Capture {
    /// Evidence (registers, stacks) and dumps: off, no thread of a watched process is held.
    bool enabled = true;
    /// At most one capture per process in this time.
    std::chrono::milliseconds min_interval{60000};
    /// Which incidents also get a dump of their process, their diagnosis inside.
    DumpPolicy dump = DumpPolicy::kDeadlock;
    /// The most memory one dump holds, in MiB; a dump cut there says so.
    std::uint64_t dump_max_mb = 1024;
    /// The most the dumps under state_dir/dumps take together, in MiB: the oldest go first to
    /// make room, never the dump of an open incident.
    std::uint64_t dumps_max_total_mb = 4096;
    /// All of the process's memory, code and read-only file data included.
    bool dump_full_memory = false;

    friend bool operator==(const Capture&, const Capture&) = default;
  } capture;

  struct Retention {
    std::chrono::hours max_age{24 * 30};
    std::size_t max_incidents = 10000;

    friend bool operator==(const Retention&, const Retention&) = default;
  } retention;

  /// One place alerts go (an entry of alerts.sinks).
  struct AlertSinkConfig {
    AlertSinkKind type = AlertSinkKind::kJournald;
    /// How many alerts may wait for it; beyond, the oldest are dropped (and counted).
    std::size_t queue = 1000;
    /// The name in the log, the status and the metrics' `sink` label: the type for a system log;
    /// "alertmanager"/"webhook" for the first of their type, unless the configuration names it.
    std::string name;
    /// alertmanager: its base URL ("http://host:9093"); webhook: the URL posted to.
    std::string url;
    /// A file holding a bearer token sent with each request (Authorization: Bearer); "": none.
    std::string token_file;
    /// https: the CA certificates (PEM) the receiver's certificate must chain to; "": the
    /// system's.
    std::string ca_file;
    /// How long an HTTP sink retries one alert (with backoff) before counting it failed.
    std::chrono::milliseconds retry_for{600000};
    /// How long one request may take.
    std::chrono::milliseconds timeout{5000};

    /// A system log sink of `kind` (journald, syslog, eventlog), named after it.
    [[nodiscard]] static AlertSinkConfig systemLog(AlertSinkKind kind);
    /// Whether the sink is an HTTP receiver (url, token_file, ca_file apply).
    [[nodiscard]] bool http() const {
      return type == AlertSinkKind::kAlertmanager || type == AlertSinkKind::kWebhook;
    }

    friend bool operator==(const AlertSinkConfig&, const AlertSinkConfig&) = default;
  };

  struct Alerts {
    /// Every alert goes to each of them; none: alerts are off.
    std::vector<AlertSinkConfig> sinks{AlertSinkConfig::systemLog(platformDefaults().alert_sink)};
    /// At most `max_per_window` alerts per target in each window.
    std::chrono::milliseconds window{60000};
    unsigned max_per_window = 10;

    friend bool operator==(const Alerts&, const Alerts&) = default;
  } alerts;

  struct Log {
    std::string level = "info";
    /// Relative paths are under state_dir; empty = no file. Unset: wctmon.log, except where
    /// standard error is systemd's journal, which keeps the log already (effectiveFile()).
    std::optional<std::string> file;
    std::size_t max_file_bytes = 10 * 1024 * 1024;
    std::size_t max_files = 3;
    std::size_t queue_size = 8192;
    bool console = true;

    /// The file to write, "" for none; `journal`: standard error is the journal.
    [[nodiscard]] std::string effectiveFile(bool journal) const {
      return file.value_or(journal ? "" : "wctmon.log");
    }
    friend bool operator==(const Log&, const Log&) = default;
  } log;

  /// The gRPC API (wctctl, dashboards).
  struct Api {
    bool enabled = true;
    /// Where it listens: "unix:/ABSOLUTE/PATH", "IPV4:PORT" or "[IPV6]:PORT". An address that
    /// is not loopback needs TLS.
    std::vector<std::string> listen = platformDefaults().api_listen;
    /// Bearer tokens, one per role; relative paths are under state_dir. Made (mode 0600, a
    /// random 256-bit token) when missing at start.
    std::filesystem::path admin_token_file = "api-admin.token";
    std::filesystem::path reader_token_file = "api-reader.token";
    /// Linux: the group whose members may use the Unix socket (root:GROUP 0660) and read the
    /// reader token (root:GROUP 0640) without being root; empty, or no such group: root only.
    std::string group = "wctmon";
    /// TLS for TCP listeners: the server's certificate and key (PEM); with a client CA, clients
    /// must present a certificate it signed (mutual TLS). Empty: no TLS.
    std::filesystem::path tls_cert_file;
    std::filesystem::path tls_key_file;
    std::filesystem::path tls_client_ca_file;
    /// Incident events queued for one WatchIncidents client before it is cut off as too slow.
    std::size_t watch_queue = 1024;

    friend bool operator==(const Api&, const Api&) = default;
  } api;

  /// The Prometheus endpoint (HTTP, /metrics): counts and durations only, no process data.
  struct Metrics {
    bool enabled = true;
    /// "IPV4:PORT" or "[IPV6]:PORT".
    std::string listen = std::string(kDefaultMetricsAddress);

    friend bool operator==(const Metrics&, const Metrics&) = default;
  } metrics;

  std::vector<TargetConfig> targets;

  friend bool operator==(const Config&, const Config&) = default;
};

/// Every problem found in a configuration or a target, in the order found; never empty.
using ConfigErrors = std::vector<ConfigError>;

/// The configuration's name of an alert sink type ("journald", "syslog", "eventlog",
/// "alertmanager", "webhook", "none"), and back.
[[nodiscard]] std::string_view alertSinkName(AlertSinkKind kind);
[[nodiscard]] std::optional<AlertSinkKind> alertSinkFromName(std::string_view name);

/// The waits that are ignored for hangs unless a target says otherwise.
[[nodiscard]] std::vector<ObjectType> defaultIgnoredWaits();

/// The config key of a wait type ("mutex", "poll", "kernel_wait", ...), and back.
[[nodiscard]] std::string waitTypeKey(ObjectType type);
[[nodiscard]] std::optional<ObjectType> waitTypeFromKey(std::string_view key);

/// Parses and validates a JSON configuration. Unknown keys are errors (they are typos).
[[nodiscard]] Result<Config, ConfigErrors> parseConfig(std::string_view json_text);

/// Reads and parses a configuration file.
[[nodiscard]] Result<Config, ConfigErrors> loadConfig(const std::filesystem::path& path);

/// Validates one target given as JSON (runtime registrations use the config's shape).
[[nodiscard]] Result<TargetConfig, ConfigErrors> parseTarget(std::string_view json_text,
                                                             const Config& defaults);

/// The JSON form of one target, as parseTarget reads it.
[[nodiscard]] std::string targetToJson(const TargetConfig& target);

}  // namespace wctmon
