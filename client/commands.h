#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/session.h"

namespace wctmon::client {

/// `targets add`: the fields of a configuration file's target; unset ones take its defaults.
struct TargetArgs {
  std::string name;
  std::string exe;
  std::string cmdline;
  std::int32_t pid = 0;
  std::optional<std::uint32_t> interval_ms;
  std::optional<std::uint32_t> hang_threshold_ms;
  /// --capture, --no-capture; neither: the configuration's capture.enabled.
  bool capture = false;
  bool no_capture = false;
  bool out_of_proc = false;
  /// WCT's flags with out_of_proc ("com", "critical_sections", "network_io"); unset = all.
  std::optional<std::vector<std::string>> wct;
};

/// `analyze`: what the API's AnalyzeProcess takes.
struct AnalyzeArgs {
  std::int32_t pid = 0;
  bool capture = false;
  bool out_of_proc = false;
  std::uint32_t max_nodes = 0;
  bool brief = false;
};

/// `incidents`: the filters of ListIncidents, and how many to show.
struct IncidentsArgs {
  std::string state = "all";  // open | resolved | all
  std::string kind = "all";   // deadlock | hang | all
  std::optional<std::chrono::system_clock::time_point> since;
  std::int32_t pid = 0;
  std::string target;
  /// At most this many, newest first; 0: all.
  std::int64_t limit = 100;
};

/// `watch`.
struct WatchArgs {
  /// When the stream ends because the service is unavailable (a restart), or cannot be reached,
  /// connect again with backoff instead of exiting; nothing already printed is printed again.
  bool reconnect = false;
};

// Each command returns wctctl's exit status (exit_codes.h), having reported any failure.
[[nodiscard]] int runStatus(Session& session);
[[nodiscard]] int runTargetsList(Session& session);
[[nodiscard]] int runTargetsAdd(Session& session, const TargetArgs& args);
[[nodiscard]] int runTargetsRemove(Session& session, const std::string& name);
[[nodiscard]] int runProcesses(Session& session);
/// kExitDeadlock when the analysis found one.
[[nodiscard]] int runAnalyze(Session& session, const AnalyzeArgs& args);
/// Asks the service for a dump of `pid` now and prints where it is and what it holds.
[[nodiscard]] int runDump(Session& session, std::int32_t pid);
[[nodiscard]] int runReload(Session& session);
/// kExitError when the service is not serving.
[[nodiscard]] int runHealth(Session& session, const std::string& service);
/// The client's version, and the server's with a `session` (none: --client).
[[nodiscard]] int runVersion(Session* session, const OutputOptions& output);

[[nodiscard]] int runIncidents(Session& session, const IncidentsArgs& args);
[[nodiscard]] int runIncident(Session& session, std::int64_t id);
/// Prints each event as it comes until the user interrupts or the server ends the stream (with
/// `reconnect`, until the user interrupts or the server refuses the watch).
[[nodiscard]] int runWatch(Session& session, const WatchArgs& args);

}  // namespace wctmon::client
