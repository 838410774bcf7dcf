// wctctl: the verbs, the global options and the exit status; the calls are in commands.cpp and
// incident_commands.cpp.
#include <CLI/CLI.hpp>
#include <iostream>
#include <limits>
#include <sstream>

#include "cli/cli_args.h"
#include "client/commands.h"
#include "client/defaults.h"
#include "client/exit_codes.h"
#include "client/time_args.h"
#include "model/incident.h"
#include "wire/terminal_text.h"

namespace {

using namespace wctmon::client;
namespace cli = wctmon::cli;

/// `text` as lines of at most `width` columns, broken between words.
std::string wrapped(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t line = 0;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
  }
  return out;
}

/// The help's footer: where wctctl looks for the server and the token on this platform.
std::string footer() {
  const auto& d = defaults();
  std::string where = "Server: --server, else $WCTMON_SERVER, else ";
  if (!d.socket.empty()) where += "unix:" + d.socket.string() + " when it exists, else ";
  where += d.tcp + ". Token: --token-file, else $WCTMON_TOKEN_FILE, else the admin token of the " +
           "service on that server when readable, else its reader token: the files it names in " +
           "SOCKET.token-files beside its socket, or for the default server " +
           (d.state_dir / kAdminTokenName).string() + " and " +
           (d.state_dir / kReaderTokenName).string() +
           "; another server gets no token of the defaults (the reader token allows status, "
           "targets list, ps, incidents, incident, watch, "
           "health; the admin token everything).";
  return wrapped(where, 100) + R"(

Exit status: 0 ok; 1 error (the server's reason is printed); 2 usage; 3 analyze found a deadlock;
4 server unavailable (nothing answers, or not within --timeout); 5 unauthenticated or permission
denied.)";
}

/// Accepts what `parse` accepts; the error says what was expected.
template <typename Parse>
CLI::Validator accepting(const std::string& expected, Parse parse) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        return parse(text) ? std::string()
                           : "expected " + expected + "; got " + cli::givenText(text);
      },
      "", "expected");
}

}  // namespace

namespace {

int commandMain(int argc, char** argv) {
  CLI::App app{"wctctl: asks and steers a running wctmon service (wctmond) over its gRPC API",
               "wctctl"};
  app.set_version_flag("--version", "wctctl " WCTMON_VERSION);
  app.require_subcommand(1);
  // Global options may come after the verb too: "wctctl incidents -o json".
  app.fallthrough();
  app.footer(footer());

  ConnectionOptions connection;
  std::string output = "table";
  std::string timeout = "10s";
  app.add_option("-o,--output", output, "table (default), wide or json (proto3 JSON mapping)")
      ->type_name("FORMAT")
      ->check(cli::oneOf({"table", "wide", "json"}));
  app.add_option("-s,--server", connection.server,
                 "unix:/path, host:port or [::1]:port (default: the local socket, else loopback)")
      ->type_name("ADDRESS")
      ->envname("WCTMON_SERVER");
  app.add_option("--token-file", connection.token_file,
                 "Bearer token file (default: the admin token of the service on --server when "
                 "readable, else its reader's)")
      ->type_name("FILE")
      ->envname("WCTMON_TOKEN_FILE");
  auto* timeout_option =
      app.add_option("--timeout", timeout,
                     "Deadline of each call (default 10s, dump 5m; watch has none)")
          ->type_name("DURATION")
          ->check(accepting("a duration such as 10s, 500ms or 2m",
                            [](const std::string& t) { return parseDuration(t).has_value(); }));
  app.add_flag("--tls", connection.tls, "TLS to a TCP server");
  app.add_option("--ca-file", connection.ca_file, "CA certificates to verify the server (PEM)")
      ->type_name("FILE");
  app.add_option("--cert-file", connection.cert_file, "Client certificate for mutual TLS (PEM)")
      ->type_name("FILE");
  app.add_option("--key-file", connection.key_file, "Client private key for mutual TLS (PEM)")
      ->type_name("FILE");
  app.add_option("--tls-server-name", connection.tls_server_name,
                 "Name to verify in the server's certificate (default: the host of --server)")
      ->type_name("NAME");

  auto* status = app.add_subcommand("status", "What the service is, does and has found");

  auto* targets = app.add_subcommand("targets", "The targets: which processes are watched");
  targets->require_subcommand(1);
  auto* targets_list = targets->add_subcommand("list", "List the targets");
  TargetArgs target;
  auto* targets_add =
      targets->add_subcommand("add", "Add a runtime target (or replace the one of that name)");
  auto* exe =
      targets_add->add_option("--exe", target.exe, "Executable name or glob")->type_name("NAME");
  auto* cmdline =
      targets_add->add_option("--cmdline", target.cmdline, "Regular expression on the command line")
          ->type_name("REGEX");
  auto* pid = targets_add->add_option("--pid", target.pid, "One process")
                  ->type_name("PID")
                  ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
  exe->excludes(cmdline)->excludes(pid);
  cmdline->excludes(pid);
  targets_add->add_option("--name", target.name, "Its name (default: the selector)")
      ->type_name("NAME");
  targets_add->add_option("--interval-ms", target.interval_ms, "Sampling interval")
      ->type_name("MS")
      ->check(cli::wholeNumber("milliseconds", 10, std::numeric_limits<std::int32_t>::max()));
  targets_add
      ->add_option("--hang-threshold-ms", target.hang_threshold_ms,
                   "How long a thread waits before it is a hang")
      ->type_name("MS")
      ->check(cli::wholeNumber("milliseconds", 100, std::numeric_limits<std::int32_t>::max()));
  targets_add->add_flag("--capture", target.capture, "Capture registers and stacks on deadlock");
  auto* out_of_proc = targets_add->add_flag("--out-of-proc", target.out_of_proc,
                                            "Follow chains into other processes");
  targets_add
      ->add_option("--wct", target.wct,
                   "Windows, with --out-of-proc: WCT's flags, comma-separated, or none "
                   "(default: com,critical_sections,network_io)")
      ->type_name("FLAGS")
      ->delimiter(',')
      ->check(CLI::IsMember({"com", "critical_sections", "network_io", "none"}))
      ->needs(out_of_proc);
  std::string remove_name;
  auto* targets_remove = targets->add_subcommand("remove", "Remove a runtime target");
  targets_remove->add_option("name", remove_name, "The target's name")
      ->type_name("NAME")
      ->required();

  auto* ps = app.add_subcommand("ps", "The processes being watched");

  AnalyzeArgs analyze_args;
  auto* analyze = app.add_subcommand(
      "analyze", "Analyse a process's wait chains now (exit 3 when it is deadlocked)");
  analyze->add_option("pid", analyze_args.pid, "The process")
      ->type_name("PID")
      ->required()
      ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
  analyze->add_flag("--capture", analyze_args.capture,
                    "Capture registers and stacks of deadlocked threads");
  analyze->add_flag("--out-of-proc", analyze_args.out_of_proc,
                    "Follow chains into other processes");
  analyze->add_option("--max-nodes", analyze_args.max_nodes, "Most nodes per chain (default 64)")
      ->type_name("N")
      ->check(cli::wholeNumber("a node count", 1, std::numeric_limits<std::uint32_t>::max() / 2));
  analyze->add_flag("--brief", analyze_args.brief, "Only the chains that lead somewhere");

  std::int32_t dump_pid = 0;
  auto* dump = app.add_subcommand(
      "dump", "Write a dump of a process now under the service's state directory (dumps/)");
  dump->add_option("pid", dump_pid, "The process")
      ->type_name("PID")
      ->required()
      ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));

  IncidentsArgs incidents_args;
  std::string since;
  auto* incidents = app.add_subcommand("incidents", "Incidents, newest first");
  incidents->add_option("--state", incidents_args.state, "open, resolved or all (default all)")
      ->type_name("STATE")
      ->check(cli::oneOf({"open", "resolved", "all"}));
  std::vector<std::string> kinds;
  for (const auto kind : wctmon::kIncidentKinds) kinds.emplace_back(wctmon::toString(kind));
  kinds.emplace_back("all");
  incidents
      ->add_option("--kind", incidents_args.kind,
                   "deadlock, hang, unresponsive, busy, stall, service-hung, window-hung or all "
                   "(default all)")
      ->type_name("KIND")
      ->check(cli::oneOf(kinds));
  incidents
      ->add_option("--since", since,
                   "Opened since: a duration back (1h, 30m) or a time (2026-11-23T10:00:00Z)")
      ->type_name("WHEN")
      ->check(accepting("a duration back such as 1h or 30m, or an RFC 3339 time such as "
                        "2026-11-23T10:00:00Z",
                        [](const std::string& t) {
                          return parseSince(t, std::chrono::system_clock::now()).has_value();
                        }));
  incidents->add_option("--pid", incidents_args.pid, "Of this process")
      ->type_name("PID")
      ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
  incidents->add_option("--target", incidents_args.target, "Of this target")->type_name("NAME");
  incidents
      ->add_option("--limit", incidents_args.limit, "At most N, newest first (default 100; 0: all)")
      ->type_name("N")
      ->check(cli::wholeNumber("a count", 0, std::numeric_limits<std::int32_t>::max()));

  std::int64_t incident_id = 0;
  auto* incident = app.add_subcommand(
      "incident", "One incident whole: chains as trees, registers and stacks of its threads");
  incident->add_option("id", incident_id, "The incident's id (wctctl incidents lists them)")
      ->type_name("ID")
      ->required()
      ->check(cli::wholeNumber("an incident id", 1, std::numeric_limits<std::int64_t>::max()));

  auto* watch = app.add_subcommand(
      "watch", "The open incidents, then each change as it happens, until Ctrl+C");
  auto* reload = app.add_subcommand("reload", "Make the service read its configuration again");
  std::string health_service;
  auto* health = app.add_subcommand("health", "The standard gRPC health check (no token needed)");
  health->add_option("--service", health_service, "One service's health (default: the server's)")
      ->type_name("NAME");
  bool client_only = false;
  auto* version = app.add_subcommand("version", "wctctl's version, and the server's");
  version->add_flag("--client", client_only, "Only wctctl's; ask no server");

  if (const auto exit = cli::parseCommandLine(app, argc, argv, "wctctl", "wctctl")) return *exit;
  if (targets_add->parsed() && target.exe.empty() && target.cmdline.empty() && target.pid == 0) {
    std::cerr << "wctctl: targets add needs --exe NAME, --cmdline REGEX or --pid PID\n";
    return kExitUsage;
  }
  if (!since.empty()) incidents_args.since = parseSince(since, std::chrono::system_clock::now());
  connection.timeout = *parseDuration(timeout);
  // A dump reads all of a process's memory: seconds, minutes for a large one.
  if (dump->parsed() && timeout_option->count() == 0) connection.timeout = std::chrono::minutes(5);
  const bool json = output == "json";
  if (version->parsed() && client_only) return runVersion(nullptr, json);

  auto opened = Connection::open(connection);
  if (auto* failure = std::get_if<Failure>(&opened)) {
    std::cerr << "wctctl: "
              << wctmon::wire::terminalSafe(
                     (connection.server.empty() ? defaultServer() : connection.server) + ": " +
                         failure->reason,
                     false)
              << "\n";
    return failure->exit_code;
  }
  Session session(*std::get<0>(opened), json               ? OutputFormat::kJson
                                        : output == "wide" ? OutputFormat::kWide
                                                           : OutputFormat::kTable);
  if (status->parsed()) return runStatus(session);
  if (targets_list->parsed()) return runTargetsList(session);
  if (targets_add->parsed()) return runTargetsAdd(session, target);
  if (targets_remove->parsed()) return runTargetsRemove(session, remove_name);
  if (ps->parsed()) return runProcesses(session);
  if (analyze->parsed()) return runAnalyze(session, analyze_args);
  if (dump->parsed()) return runDump(session, dump_pid);
  if (incidents->parsed()) return runIncidents(session, incidents_args);
  if (incident->parsed()) return runIncident(session, incident_id);
  if (watch->parsed()) return runWatch(session);
  if (reload->parsed()) return runReload(session);
  if (health->parsed()) return runHealth(session, health_service);
  if (version->parsed()) return runVersion(&session, json);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  return wctmon::cli::checkedOutput(commandMain(argc, argv), "wctctl");
}
