#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "cli/help_formatter.h"
#include "cli/man_page.h"
#include "client/commands.h"
#include "client/connection.h"

namespace wctmon::client {

/// wctctl's command line: the verbs, their options and examples, and where each value goes.
/// The one table that --help, the man page (`wctctl __man`) and the completion scripts are
/// written from.
struct CommandLine {
  CLI::App app{"wctctl: asks and steers a running wctmon service (wctmond) over its gRPC API",
               "wctctl"};
  std::shared_ptr<cli::HelpFormatter> help;

  // The global options.
  ConnectionOptions connection;
  std::string output = "table";
  bool no_headers = false;
  std::string timeout = "10s";
  CLI::Option* timeout_option = nullptr;

  // The verbs, and what each takes.
  CLI::App* status = nullptr;
  CLI::App* targets = nullptr;
  CLI::App* targets_list = nullptr;
  CLI::App* targets_add = nullptr;
  TargetArgs target;
  CLI::App* targets_remove = nullptr;
  std::string remove_name;
  CLI::App* ps = nullptr;
  CLI::App* analyze = nullptr;
  AnalyzeArgs analyze_args;
  CLI::App* dump = nullptr;
  std::int32_t dump_pid = 0;
  CLI::App* incidents = nullptr;
  IncidentsArgs incidents_args;
  std::string since;
  CLI::App* incident = nullptr;
  std::int64_t incident_id = 0;
  CLI::App* watch = nullptr;
  WatchArgs watch_args;
  CLI::App* reload = nullptr;
  CLI::App* health = nullptr;
  std::string health_service;
  CLI::App* version = nullptr;
  bool client_only = false;
  CLI::App* completion = nullptr;
  std::string shell;
  /// Hidden: the man page in roff, for the build (installer/linux).
  CLI::App* man = nullptr;
  std::string man_date;
};

/// The command line, every option and verb declared.
[[nodiscard]] std::unique_ptr<CommandLine> makeCommandLine();

/// What wctctl(1) says beyond the option tables: what it is for, exit status, environment,
/// files (this platform's defaults).
[[nodiscard]] cli::ManPage wctctlManPage(const std::string& date);

}  // namespace wctmon::client
