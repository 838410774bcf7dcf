// wctctl: the command line read (command_line.cpp), then the verb run (commands.cpp,
// incident_commands.cpp), with the exit status it says.
#include <iostream>

#include "cli/cli_args.h"
#include "cli/completion.h"
#include "cli/man_page.h"
#include "client/command_line.h"
#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/output.h"
#include "client/terminal.h"
#include "client/time_args.h"
#include "wire/terminal_text.h"

namespace {

using namespace wctmon::client;
namespace cli = wctmon::cli;

/// Whether `c`'s verb has names to print with -o name ("incident/42").
bool hasNames(const CommandLine& c) {
  for (const CLI::App* verb : {c.incidents, c.incident, c.targets_list, c.targets_add,
                               c.targets_remove, c.ps, c.analyze, c.watch}) {
    if (verb->parsed()) return true;
  }
  return false;
}

/// The verb given, as typed ("targets add").
std::string verbOf(const CommandLine& c) {
  std::string out;
  for (const CLI::App* at = &c.app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    out += (out.empty() ? "" : " ") + at->get_name();
  }
  return out;
}

int commandMain(int argc, char** argv) {
  auto line = makeCommandLine();
  auto& c = *line;
  if (const auto exit = cli::parseCommandLine(c.app, argc, argv, "wctctl", "wctctl")) return *exit;
  if (c.man->parsed()) {
    std::cout << cli::manPage(c.app, *c.help, wctctlManPage(c.man_date));
    return kExitOk;
  }
  if (c.completion->parsed()) {
    std::cout << cli::completionScript(c.app, "wctctl", *cli::shellNamed(c.shell));
    return kExitOk;
  }
  if (c.targets_add->parsed() && c.target.exe.empty() && c.target.cmdline.empty() &&
      c.target.pid == 0) {
    std::cerr << "wctctl: targets add needs --exe NAME, --cmdline REGEX or --pid PID\n";
    return kExitUsage;
  }
  std::string why;
  auto output = *parseOutput(c.output, why);  // checked by the option's validator
  output.headers = !c.no_headers;
  output.width = terminalWidth();
  if (output.format == OutputFormat::kName && !hasNames(c)) {
    std::cerr << "wctctl: -o name prints the names of incidents, targets and processes; "
              << verbOf(c) << " has none (-o json, yaml or jsonpath=... show its data)\n";
    return kExitUsage;
  }
  if (!c.since.empty())
    c.incidents_args.since = parseSince(c.since, std::chrono::system_clock::now());
  c.connection.timeout = *parseDuration(c.timeout);
  // A dump reads all of a process's memory: seconds, minutes for a large one.
  if (c.dump->parsed() && c.timeout_option->count() == 0) {
    c.connection.timeout = std::chrono::minutes(5);
  }
  if (c.version->parsed() && c.client_only) return runVersion(nullptr, output);

  const std::string server = c.connection.server;
  auto opened = Connection::open(c.connection);
  if (auto* failure = std::get_if<Failure>(&opened)) {
    std::cerr << "wctctl: "
              << wctmon::wire::terminalSafe(
                     (server.empty() ? defaultServer() : server) + ": " + failure->reason, false)
              << "\n";
    return failure->exit_code;
  }
  Session session(*std::get<0>(opened), std::move(output));
  if (c.status->parsed()) return runStatus(session);
  if (c.targets_list->parsed()) return runTargetsList(session);
  if (c.targets_add->parsed()) return runTargetsAdd(session, c.target);
  if (c.targets_remove->parsed()) return runTargetsRemove(session, c.remove_name);
  if (c.ps->parsed()) return runProcesses(session);
  if (c.analyze->parsed()) return runAnalyze(session, c.analyze_args);
  if (c.dump->parsed()) return runDump(session, c.dump_pid);
  if (c.incidents->parsed()) return runIncidents(session, c.incidents_args);
  if (c.incident->parsed()) return runIncident(session, c.incident_id);
  if (c.watch->parsed()) return runWatch(session, c.watch_args);
  if (c.reload->parsed()) return runReload(session);
  if (c.health->parsed()) return runHealth(session, c.health_service);
  if (c.version->parsed()) return runVersion(&session, session.output());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  return wctmon::cli::checkedOutput(commandMain(argc, argv), "wctctl");
}
