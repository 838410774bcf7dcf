#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

#include "app/dump_command.h"
#include "app/incidents_command.h"
#include "app/man_pages.h"
#include "app/run_service.h"
#include "cli/cli_args.h"
#include "cli/help_formatter.h"
#include "cli/man_page.h"
#include "core/analyzer.h"
#include "core/config.h"
#include "platform/platform_factory.h"
#include "wire/json_writer.h"
#include "wire/terminal_text.h"
#include "wire/text_report.h"

namespace {

// Exit codes of the command-line tool.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitDeadlock = 3;

struct AnalyzeArgs {
  int pid = 0;
  bool all = false;
  bool out_of_proc = false;
  bool capture = false;
  bool json = false;
  bool brief = false;
  std::uint32_t max_nodes = wctmon::kDefaultMaxNodes;
  std::int64_t timed_wait_bound_ms = wctmon::kDefaultTimedWaitBound.count();
  std::string core;
  std::string exe;
};

bool everyThreadDenied(const wctmon::AnalysisResult& result) {
  bool any = false;
  for (const auto& chain : result.chains) {
    if (chain.nodes.empty()) continue;
    any = true;
    if (chain.nodes.front().status != wctmon::ObjectStatus::kNoAccess) return false;
  }
  return any;
}

int runAnalyze(const AnalyzeArgs& args) {
  // The same asynchronous path as the service, driven by a loop on this thread.
  wctmon::RunLoop loop;
  auto source = wctmon::makeWaitChainSource(loop.executor());
  auto inspector = wctmon::makeThreadInspector();
  wctmon::WaitChainAnalyzer analyzer(inspector.get());
  const wctmon::AnalyzeOptions options{
      .max_nodes = args.max_nodes,
      .out_of_proc = args.out_of_proc,
      .wct = {},
      .all_processes = args.all,
      .timed_wait_bound = std::chrono::milliseconds(args.timed_wait_bound_ms),
      .capture = args.capture};
  auto session = args.all ? source->openSystem() : source->open(wctmon::Pid{args.pid});
  if (!session) {
    std::cerr << "wctmon: " << session.error().message << "\n";
    return kExitError;
  }
  auto analysis = wctmon::analyzeNow(loop, analyzer, std::move(session).value(), options);
  auto result = analysis ? wctmon::Result<wctmon::AnalysisResult>(std::move(analysis->result))
                         : wctmon::Result<wctmon::AnalysisResult>(analysis.error());
  if (!result) {
    std::cerr << "wctmon: " << result.error().message << "\n";
    return kExitError;
  }
  wctmon::app::printAnalysis(*result, args.json, args.brief || args.all);
  if (!args.all && everyThreadDenied(*result)) {
    std::cerr << "wctmon: permission denied: cannot read the waits of process " << args.pid << " ("
              << wctmon::app::privilegeHint() << ")\n";
    return kExitError;
  }
  return result->deadlocks.empty() ? kExitOk : kExitDeadlock;
}

/// `wctmon validate-config FILE`: 0 when valid, 1 with one line per problem otherwise.
int runValidateConfig(const std::string& file) {
  const auto parsed = wctmon::loadConfig(file);
  if (parsed) {
    std::cout << file << ": OK (" << parsed->targets.size() << " target(s))\n";
    return kExitOk;
  }
  // Problems in the file are its report, one per line; a file that cannot be read is an error.
  for (const auto& e : parsed.error()) {
    std::cerr << (e.unreadable ? "wctmon: " : "") << e.describe(file) << "\n";
  }
  return kExitError;
}

}  // namespace

namespace {

int commandMain(int argc, char** argv) {
  CLI::App app{"wctmon: finds which threads wait on what, owned by whom, and the deadlocks"};
  // Before the commands: each takes its parent's formatter when made.
  const auto help = wctmon::cli::useHelpFormatter(app);
  app.set_version_flag("--version", "wctmon " WCTMON_VERSION);
  app.require_subcommand(1);

  AnalyzeArgs args;
  auto* analyze = app.add_subcommand(
      "analyze", "Analyse the wait chains of a live process once, or of a core file");
  auto* pid = analyze->add_option("--pid,-p", args.pid, "Process to analyse")
                  ->type_name("PID")
                  ->check(wctmon::cli::wholeNumber("a process id", 1, wctmon::cli::kMaxPid));
  auto* all =
      analyze->add_flag("--all", args.all, "Analyse every process (follows chains across them)");
  pid->excludes(all);
  auto* core =
      analyze
          ->add_option("--core", args.core,
                       "Analyse a core file instead (ELF, x86-64: gcore, systemd-coredump, the "
                       "kernel, wctmon dump)")
          ->type_name("FILE");
  core->excludes(pid);
  core->excludes(all);
  analyze
      ->add_option("--exe", args.exe,
                   "With --core: the core's executable, when it is no longer where the core says")
      ->type_name("PATH")
      ->needs(core);
  // A core holds one process, whose threads no longer run: nothing to follow or to capture.
  analyze->add_flag("--out-of-proc", args.out_of_proc, "Follow chains into other processes")
      ->excludes(core);
  analyze
      ->add_flag("--capture", args.capture,
                 "Capture register contexts and stacks of the threads in each deadlock")
      ->excludes(core);
  analyze->add_option("--max-nodes", args.max_nodes, "Most nodes per chain (default 64)")
      ->type_name("N")
      ->check(wctmon::cli::wholeNumber("a node count", 1,
                                       std::numeric_limits<std::uint32_t>::max() / 2));
  analyze
      ->add_option("--timed-wait-bound", args.timed_wait_bound_ms,
                   "A cycle closed by a wait with a timeout is a deadlock only when that wait has "
                   "more than this many milliseconds left (default 30000)")
      ->type_name("MS")
      ->check(wctmon::cli::wholeNumber("milliseconds", 0, std::int64_t{1} << 40));
  analyze->add_flag("--json", args.json, "Print the result as JSON (proto3 JSON mapping)");
  analyze->add_flag("--brief", args.brief, "Print only the chains that lead somewhere");

  wctmon::app::DumpArgs dump_args;
  auto* dump = app.add_subcommand(
      "dump", "Write a dump of a live process that a debugger opens, with its diagnosis inside");
  dump->require_subcommand(0, 1);
  dump->add_option("--pid,-p", dump_args.pid, "Process to dump")
      ->type_name("PID")
      ->check(wctmon::cli::wholeNumber("a process id", 1, wctmon::cli::kMaxPid));
  dump->add_option("--out,-o", dump_args.out,
                   "Where to write it (default wctmon-PID-TIME.core in this directory)")
      ->type_name("FILE");
  dump->add_flag("--full", dump_args.full_memory,
                 "All of the process's memory, code and read-only file data included");
  dump->add_option("--max-mb", dump_args.max_mib, "The most MiB of memory it holds (default all)")
      ->type_name("N")
      ->check(wctmon::cli::wholeNumber("a size in MiB", 1, std::int64_t{1} << 30));
  std::string dump_file;
  auto* dump_info = dump->add_subcommand(
      "info", "Print the diagnosis wctmon put inside a dump (ELF core, minidump)");
  dump_info->add_option("file", dump_file, "The dump")->type_name("FILE")->required();

  std::string run_config;
  auto* run = app.add_subcommand("run", "Run the monitoring service in the foreground");
  run->add_option("--config,-c", run_config, "Configuration file")->type_name("FILE")->required();

  std::string validate_file;
  auto* validate = app.add_subcommand("validate-config", "Check a configuration file");
  validate->add_option("file", validate_file, "Configuration file")->type_name("FILE")->required();

  // Declared here as in wctmond, so that they are checked and listed by --help here; wctmond,
  // which reads the store, is handed the same words.
  wctmon::app::IncidentsArgs incidents_args;
  auto* incidents = app.add_subcommand(
      "incidents", "List recorded incidents from the store, or show one whole with --id");
  wctmon::app::addIncidentsOptions(*incidents, incidents_args);

  // Hidden: the man page wctmon(8) in roff, for the build (installer/linux).
  std::string man_date;
  auto* man = app.add_subcommand("__man", "The man page wctmon(8), in roff");
  man->group("");
  man->add_option("--date", man_date, "The date of the release")->type_name("DATE");

  help->setExamples(
      &app, {{"wctmon analyze --pid 4242", "its wait chains and deadlocks, now"},
             {"wctmon validate-config /etc/wctmon/wctmon.json",
              "every problem of a configuration, with its JSON pointer"},
             {"wctmon run --config /etc/wctmon/wctmon.json", "the service, in the foreground"}});
  help->setExamples(
      analyze, {{"wctmon analyze --pid 4242", "exit 3 when it is deadlocked"},
                {"wctmon analyze --pid 4242 --capture --json",
                 "with the registers and stacks of the deadlocked threads, as JSON"},
                {"wctmon analyze --all --brief", "every process, the chains that lead somewhere"},
                {"wctmon analyze --core core.4242 --exe /usr/bin/app",
                 "a core file, its executable moved since"}});
  help->setExamples(dump, {{"wctmon dump --pid 4242", "wctmon-4242-TIME.core here, gdb opens it"},
                           {"wctmon dump --pid 4242 --max-mb 512 --out /var/tmp/app.core",
                            "at most 512 MiB of its memory"}});
  help->setExamples(dump_info, {{"wctmon dump info /var/tmp/app.core",
                                 "the analysis it was taken with, as JSON"}});
  help->setExamples(run, {{"wctmon run --config /etc/wctmon/wctmon.json",
                           "what the unit wctmon.service starts"}});
  help->setExamples(validate, {{"wctmon validate-config /etc/wctmon/wctmon.json",
                                "OK, or one line per problem (exit 1)"}});
  help->setExamples(
      incidents, {{"wctmon incidents -c /etc/wctmon/wctmon.json --state open",
                   "the open incidents, from the store"},
                  {"wctmon incidents -c /etc/wctmon/wctmon.json --id 42", "one incident whole"}});

  if (const auto exit = wctmon::cli::parseCommandLine(app, argc, argv, "wctmon", "wctmon")) {
    return *exit;
  }
  if (man->parsed()) {
    std::cout << wctmon::cli::manPage(app, *help, wctmon::app::wctmonManPage(man_date));
    return kExitOk;
  }
  if (analyze->parsed() && !args.all && args.pid == 0 && args.core.empty()) {
    std::cerr << "wctmon: analyze needs --pid PID, --all or --core FILE\n";
    return kExitUsage;
  }
  if (dump->parsed() && !dump_info->parsed() && dump_args.pid == 0) {
    std::cerr << "wctmon: dump needs --pid PID (or: dump info FILE)\n";
    return kExitUsage;
  }
  if (dump_info->parsed() && dump_args.pid != 0) {
    std::cerr << "wctmon: dump info reads a file: --pid does not go with it\n";
    return kExitUsage;
  }
  try {
    if (analyze->parsed() && !args.core.empty()) {
      return wctmon::app::runAnalyzeCore(
          {.core = args.core,
           .exe = args.exe,
           .json = args.json,
           .brief = args.brief,
           .max_nodes = args.max_nodes,
           .timed_wait_bound = std::chrono::milliseconds(args.timed_wait_bound_ms)});
    }
    if (analyze->parsed()) return runAnalyze(args);
    if (dump_info->parsed()) return wctmon::app::runDumpInfo(dump_file);
    if (dump->parsed()) return wctmon::app::runDump(dump_args);
    if (run->parsed()) return wctmon::app::runService({"--config", run_config});
    if (validate->parsed()) return runValidateConfig(validate_file);
    if (incidents->parsed()) {
      std::vector<std::string> forwarded(argv + 1, argv + argc);
      return wctmon::app::runService(std::move(forwarded));
    }
  } catch (const std::exception& e) {
    std::cerr << "wctmon: " << e.what() << "\n";
    return kExitError;
  }
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  return wctmon::cli::checkedOutput(commandMain(argc, argv), "wctmon");
}
