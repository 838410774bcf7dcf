#include "client/commands.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <limits>
#include <sstream>

#include "client/exit_codes.h"
#include "client/human_time.h"
#include "client/table.h"
#include "model/format.h"
#include "wire/incident_text.h"
#include "wire/proto_convert.h"
#include "wire/text_report.h"

namespace wctmon::client {
namespace {

using google::protobuf::util::TimeUtil;

std::string durationOf(const google::protobuf::Duration& d) {
  const auto ms = TimeUtil::DurationToMilliseconds(d);
  return ms == 0 && TimeUtil::DurationToMicroseconds(d) > 0
             ? std::to_string(TimeUtil::DurationToMicroseconds(d)) + "us"
             : durationText(std::chrono::milliseconds(ms));
}

std::string yesNo(bool value) { return value ? "yes" : "no"; }

std::string selectorOf(const v1::Target& t) {
  if (t.has_exe()) return "exe=" + t.exe();
  if (t.has_cmdline()) return "cmdline=" + t.cmdline();
  if (t.has_pid()) return "pid=" + std::to_string(t.pid());
  if (t.all()) return "all";
  return "-";
}

std::string originOf(v1::TargetOrigin origin) {
  return origin == v1::TARGET_ORIGIN_RUNTIME  ? "runtime"
         : origin == v1::TARGET_ORIGIN_CONFIG ? "config"
                                              : "-";
}

std::string ignoredWaits(const v1::Target& t) {
  std::string out;
  for (const auto& w : t.ignore_waits()) out += (out.empty() ? "" : ",") + w;
  return out.empty() ? "(defaults)" : out;
}

/// "no", "yes", or with WCT's flags when not all are set: "yes (wct: com)", "yes (wct: none)".
std::string outOfProcText(const v1::Target& t) {
  if (!t.out_of_proc()) return "no";
  const auto& wct = t.wct();
  std::string flags;
  const auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!flags.empty()) flags += ',';
    flags += name;
  };
  add(!wct.has_com() || wct.com(), "com");
  add(!wct.has_critical_sections() || wct.critical_sections(), "critical_sections");
  add(!wct.has_network_io() || wct.network_io(), "network_io");
  if (flags == "com,critical_sections,network_io") return "yes";
  return "yes (wct: " + (flags.empty() ? std::string("none") : flags) + ")";
}

void printTargets(Session& session, const google::protobuf::RepeatedPtrField<v1::Target>& targets) {
  if (session.names()) {
    std::vector<std::string> names;
    for (const auto& t : targets) names.push_back("target/" + t.name());
    Session::printNames(names);
    return;
  }
  std::vector<Table::Column> columns = {{"NAME", true}, {"SELECTOR", true}, {"INTERVAL"},
                                        {"HANG AFTER"}, {"CAPTURE"},        {"ORIGIN"}};
  if (session.wide()) {
    columns.insert(columns.end(), {{"OUT-OF-PROC"}, {"IGNORED WAITS"}});
  }
  Table table(columns);
  for (const auto& t : targets) {
    std::vector<std::string> row = {t.name(),
                                    selectorOf(t),
                                    durationText(std::chrono::milliseconds(t.interval_ms())),
                                    durationText(std::chrono::milliseconds(t.hang_threshold_ms())),
                                    yesNo(t.capture()),
                                    originOf(t.origin())};
    if (session.wide()) row.insert(row.end(), {outOfProcText(t), ignoredWaits(t)});
    table.add(std::move(row));
  }
  session.printTable(table);
}

/// "1 deadlock, 0 hangs, 2 unresponsive": deadlocks and hangs always, the other kinds when some
/// are open.
std::string openCounts(const v1::ServiceStatus& s) {
  std::string out;
  for (const auto& c : s.open_incidents()) {
    const auto kind = wire::fromProto(c.kind());
    std::string text;
    if (!kind) {
      text = countOf(c.count(), "other");
    } else if (*kind == IncidentKind::kDeadlock || *kind == IncidentKind::kHang ||
               *kind == IncidentKind::kStall) {
      text = countOf(c.count(), toString(*kind));
    } else if (c.count() != 0) {
      text = std::to_string(c.count()) + " " + toString(*kind);
    }
    if (!text.empty()) out += (out.empty() ? "" : ", ") + text;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

int runStatus(Session& session) {
  v1::ServiceStatus s;
  if (!session.call(&v1::Monitor::Stub::GetStatus, v1::GetStatusRequest(), s)) {
    return session.exitCode();
  }
  if (session.data()) {
    session.printData(s, false);
    return kExitOk;
  }
  std::ostringstream out;
  // Long values (an alert route's reason) wrap at word boundaries under their column to fit the
  // terminal; piped, each stays on its line.
  constexpr std::size_t kKeyWidth = 14;
  const std::size_t value_width =
      session.output().width
          ? std::max<std::size_t>(*session.output().width, kKeyWidth + 20) - kKeyWidth
          : std::numeric_limits<std::size_t>::max();
  const auto row = [&](std::string_view key, const std::string& value) {
    std::string line(key);
    line.resize(std::max(kKeyWidth, key.size() + 1), ' ');
    std::size_t used = 0;
    std::istringstream words(value);
    for (std::string word; words >> word;) {
      if (used > 0 && used + 1 + word.size() > value_width) {
        out << line << "\n";
        line = std::string(kKeyWidth, ' ');
        used = 0;
      }
      line += (used > 0 ? " " : "") + word;
      used += (used > 0 ? 1 : 0) + word.size();
    }
    out << line << "\n";
  };
  row("server", session.connection().server());
  row("version", s.version() + " (" + s.platform() + ")");
  row("up", durationOf(s.uptime()) + ", since " + utcTimeText(wire::fromTimestamp(s.started_at())));
  row("healthy", s.healthy() ? "yes" : "NO: every worker is stuck in the platform");
  row("wait source", s.source().name() +
                         (s.source().available() ? ", available" : ", NOT available") +
                         (s.source().reason().empty() ? "" : ": " + s.source().reason()));
  // The route says why when alerts are not delivered.
  row("alerts", s.alerts().configured() + (s.alerts().delivers() ? " (" : ": ") +
                    s.alerts().route() + (s.alerts().delivers() ? ")" : ""));
  for (const auto& sink : s.alerts().sinks()) {
    std::string line = std::to_string(sink.delivered()) + " delivered, " +
                       std::to_string(sink.failed()) + " failed, " +
                       std::to_string(sink.dropped()) + " dropped, " +
                       std::to_string(sink.queued()) + " queued";
    if (sink.retried() != 0) line += ", " + std::to_string(sink.retried()) + " retried";
    if (!sink.last_error().empty()) line += " (last failure: " + sink.last_error() + ")";
    row("  " + sink.name(), line);
  }
  row("targets", std::to_string(s.targets()));
  row("watching",
      countOf(s.watched_processes(), "process") + ", " + countOf(s.watched_threads(), "thread"));
  row("samples", std::to_string(s.samples()) + " (" + std::to_string(s.samples_skipped()) +
                     " skipped, " + std::to_string(s.samples_overdue()) + " overdue, " +
                     std::to_string(s.sample_errors()) + " failed)");
  row("sample time", "last " + durationOf(s.last_sample_duration()) + ", p99 " +
                         durationOf(s.p99_sample_duration()));
  row("open", openCounts(s));
  row("incidents", std::to_string(s.incidents_opened()) + " opened, " +
                       std::to_string(s.incidents_resolved()) + " resolved");
  row("watchers", std::to_string(s.api_watchers()));
  if (s.restart_needed_size() > 0) {
    std::string keys;
    for (const auto& k : s.restart_needed()) keys += (keys.empty() ? "" : ", ") + k;
    row("restart for", keys);
  }
  Session::print(out.str());
  return kExitOk;
}

int runTargetsList(Session& session) {
  v1::ListTargetsResponse r;
  if (!session.call(&v1::Monitor::Stub::ListTargets, v1::ListTargetsRequest(), r)) {
    return session.exitCode();
  }
  if (session.data()) {
    session.printData(r, true);
  } else {
    printTargets(session, r.targets());
  }
  return kExitOk;
}

int runTargetsAdd(Session& session, const TargetArgs& args) {
  v1::AddTargetRequest request;
  auto* t = request.mutable_target();
  t->set_name(args.name);
  if (!args.exe.empty()) t->set_exe(args.exe);
  if (!args.cmdline.empty()) t->set_cmdline(args.cmdline);
  if (args.pid != 0) t->set_pid(args.pid);
  if (args.interval_ms) t->set_interval_ms(*args.interval_ms);
  if (args.hang_threshold_ms) t->set_hang_threshold_ms(*args.hang_threshold_ms);
  // Neither flag: the configuration's capture.enabled, as for a target of the file.
  if (args.capture) t->set_capture(true);
  if (args.no_capture) t->set_capture(false);
  if (args.out_of_proc) t->set_out_of_proc(true);
  if (args.wct) {
    const auto has = [&](std::string_view flag) {
      return std::find(args.wct->begin(), args.wct->end(), flag) != args.wct->end();
    };
    auto* wct = t->mutable_wct();
    wct->set_com(has("com"));
    wct->set_critical_sections(has("critical_sections"));
    wct->set_network_io(has("network_io"));
  }
  v1::Target added;
  if (!session.call(&v1::Monitor::Stub::AddTarget, request, added)) return session.exitCode();
  if (session.data()) {
    session.printData(added, false);
  } else {
    google::protobuf::RepeatedPtrField<v1::Target> one;
    *one.Add() = added;
    printTargets(session, one);
  }
  return kExitOk;
}

int runTargetsRemove(Session& session, const std::string& name) {
  v1::RemoveTargetRequest request;
  request.set_name(name);
  v1::RemoveTargetResponse r;
  if (!session.call(&v1::Monitor::Stub::RemoveTarget, request, r)) return session.exitCode();
  if (session.data()) {
    session.printData(r, false);
  } else if (session.names()) {
    Session::printNames({"target/" + name});
  } else {
    Session::print("target \"" + name + "\" removed\n");
  }
  return kExitOk;
}

namespace {

/// "-" without a probe; "passing 3ms", "failing 2: timed out after 2000 ms", "unresponsive 5:
/// connection refused".
std::string probeText(const v1::WatchedProcess& p) {
  if (!p.has_probe()) return "-";
  const auto& s = p.probe();
  std::string out = s.state();
  if (s.state() == "passing") {
    const auto us = google::protobuf::util::TimeUtil::DurationToMicroseconds(s.last_latency());
    out += " " + (us < 1000 ? std::to_string(us) + "us"
                            : durationText(std::chrono::milliseconds(us / 1000)));
  } else if (s.failures_in_a_row() > 0) {
    out += " " + std::to_string(s.failures_in_a_row()) + ": " + s.last_detail();
  }
  return out;
}

}  // namespace

int runProcesses(Session& session) {
  v1::ListProcessesResponse r;
  if (!session.call(&v1::Monitor::Stub::ListProcesses, v1::ListProcessesRequest(), r)) {
    return session.exitCode();
  }
  if (session.data()) {
    session.printData(r, true);
    return kExitOk;
  }
  if (session.names()) {
    std::vector<std::string> names;
    for (const auto& p : r.processes()) names.push_back("process/" + std::to_string(p.pid()));
    Session::printNames(names);
    return kExitOk;
  }
  std::vector<Table::Column> columns = {{"PID", false, true},     {"NAME", true},  {"TARGET", true},
                                        {"THREADS", false, true}, {"STATE", true}, {"SAMPLED"},
                                        {"PROBE", true}};
  if (session.wide()) columns.push_back({"STARTED"});
  Table table(columns);
  const auto now = std::chrono::system_clock::now();
  for (const auto& p : r.processes()) {
    const std::string sampled =
        p.has_last_sample_at() ? agoText(wire::fromTimestamp(p.last_sample_at()), now) : "never";
    std::vector<std::string> row = {std::to_string(p.pid()),
                                    p.name(),
                                    p.target(),
                                    std::to_string(p.threads()),
                                    p.state(),
                                    sampled,
                                    probeText(p)};
    if (session.wide()) {
      row.push_back(p.has_started_at() ? timeAndAgo(wire::fromTimestamp(p.started_at()), now)
                                       : "-");
    }
    table.add(std::move(row));
  }
  session.printTable(table);
  return kExitOk;
}

int runAnalyze(Session& session, const AnalyzeArgs& args) {
  v1::AnalyzeProcessRequest request;
  request.set_pid(args.pid);
  request.set_capture(args.capture);
  request.set_out_of_proc(args.out_of_proc);
  request.set_max_nodes(args.max_nodes);
  v1::AnalyzeResult result;
  if (!session.call(&v1::Monitor::Stub::AnalyzeProcess, request, result)) {
    return session.exitCode();
  }
  if (session.data()) {
    session.printData(result, false);
  } else if (session.names()) {
    Session::printNames({"process/" + std::to_string(result.pid())});
  } else {
    std::ostringstream out;
    wire::writeTextReport(out, wire::fromProto(result), args.brief);
    Session::print(out.str());
  }
  return result.deadlocks_size() > 0 ? kExitDeadlock : kExitOk;
}

int runDump(Session& session, std::int32_t pid) {
  v1::DumpProcessRequest request;
  request.set_pid(pid);
  v1::Dump dump;
  if (!session.call(&v1::Monitor::Stub::DumpProcess, request, dump)) return session.exitCode();
  if (session.data()) {
    session.printData(dump, false);
  } else {
    std::ostringstream out;
    wire::writeDump(out, wire::fromProto(dump));
    // The lines of an incident's dump, without their indent.
    std::string text;
    std::istringstream lines(out.str());
    for (std::string line; std::getline(lines, line);) {
      text += line.substr(line.find_first_not_of(' ')) + "\n";
    }
    Session::print(text);
  }
  return kExitOk;
}

int runReload(Session& session) {
  v1::ReloadConfigResponse r;
  if (!session.call(&v1::Monitor::Stub::ReloadConfig, v1::ReloadConfigRequest(), r)) {
    return session.exitCode();
  }
  if (session.data()) {
    session.printData(r, false);
    return kExitOk;
  }
  const auto list = [](const auto& keys) {
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
  };
  std::string text = "configuration reloaded";
  if (r.applied_size() == 0 && r.needs_restart_size() == 0 && r.failed().empty()) {
    text += ": nothing changed";
  }
  if (r.applied_size() > 0) text += "; applied " + list(r.applied());
  if (r.needs_restart_size() > 0) text += "; needs a restart: " + list(r.needs_restart());
  for (const auto& [key, why] : r.failed()) text += "; not applied: " + key + " (" + why + ")";
  Session::print(text + "\n");
  return r.failed().empty() ? kExitOk : kExitError;
}

int runHealth(Session& session, const std::string& service) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse r;
  const auto context = session.connection().context();
  if (!session.succeeded(session.connection().health().Check(context.get(), request, &r))) {
    return session.exitCode();
  }
  if (session.data()) {
    session.printData(r, false);
  } else {
    Session::print(grpc::health::v1::HealthCheckResponse::ServingStatus_Name(r.status()) + "\n");
  }
  return r.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitError;
}

int runVersion(Session* session, const OutputOptions& output) {
  google::protobuf::Struct versions;
  (*versions.mutable_fields())["client_version"].set_string_value(WCTMON_VERSION);
  v1::ServiceStatus s;
  const bool reached =
      session != nullptr && session->call(&v1::Monitor::Stub::GetStatus, v1::GetStatusRequest(), s);
  if (reached) {
    (*versions.mutable_fields())["server_version"].set_string_value(s.version());
    (*versions.mutable_fields())["server_platform"].set_string_value(s.platform());
  }
  if (Session::isData(output)) {
    Session::printData(output, versions, false);
  } else {
    Session::print(std::string("wctctl ") + WCTMON_VERSION + "\n");
    if (reached) {
      Session::print("wctmond " + s.version() + " (" + s.platform() + ") at " +
                     session->connection().server() + "\n");
    }
  }
  return session == nullptr || reached ? kExitOk : session->exitCode();
}

}  // namespace wctmon::client
