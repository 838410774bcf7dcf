#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>

#include "cli/cli_args.h"

namespace wctmon::app {

struct IncidentsArgs {
  std::string config;
  bool json = false;
  std::string state = "all";  // open | resolved | all
  std::size_t limit = 0;      // 0 = all
  std::int64_t id = 0;        // 0 = list; otherwise the one incident to show whole
};

/// `wctmon incidents`: lists incidents straight from the store, whether the service runs or not,
/// or shows one whole with `--id`. Exit 0, or 1 with one line on stderr.
[[nodiscard]] int runIncidents(const IncidentsArgs& args);

/// Declares the `incidents` options on `command`, filling `args`. Both binaries declare them
/// through this one function: wctmon checks them and shows them in its --help, then hands the
/// same words to wctmond, which reads the store. Inline, so that wctmon links nothing of it.
inline void addIncidentsOptions(CLI::App& command, IncidentsArgs& args) {
  command
      .add_option("--config,-c", args.config, "Configuration file (its state_dir holds the store)")
      ->type_name("FILE")
      ->required();
  command.add_flag("--json", args.json,
                   "Print the proto3 JSON of an IncidentList (with --id: of that Incident)");
  auto* state = command.add_option("--state", args.state, "open, resolved or all (default all)")
                    ->type_name("STATE")
                    ->check(cli::oneOf({"open", "resolved", "all"}));
  auto* limit =
      command.add_option("--limit", args.limit, "The most recent N only")
          ->type_name("N")
          ->check(cli::wholeNumber("a count", 1, std::numeric_limits<std::int32_t>::max()));
  command
      .add_option("--id", args.id,
                  "Show one incident whole: every chain, every captured thread's registers and "
                  "stack, timestamps, resolution")
      ->type_name("ID")
      ->check(cli::wholeNumber("an incident id", 1, std::numeric_limits<std::int64_t>::max()))
      ->excludes(state)
      ->excludes(limit);
}

}  // namespace wctmon::app
