#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/cli_args.h"
#include "cli/help_formatter.h"

namespace wctmon::cli {

/// A command line shaped as wctctl's: global options that fall through, nested commands, an
/// option of words, a file, a positional of words, a hidden command; each with an example.
struct ToyApp {
  CLI::App app{"tool: does things", "tool"};
  std::shared_ptr<HelpFormatter> help = useHelpFormatter(app);
  std::string output;
  std::string file;
  std::string state;
  std::string shell;
  int count = 0;
  bool verbose = false;
  CLI::App* jobs = nullptr;
  CLI::App* jobs_list = nullptr;

  ToyApp() {
    app.require_subcommand(1);
    app.fallthrough();
    app.add_option("-o,--output", output, "table or json")->check(oneOf({"table", "json"}));
    app.add_option("--token-file", file, "A token")->type_name("FILE");
    jobs = app.add_subcommand("jobs", "The jobs");
    jobs->require_subcommand(1);
    jobs_list = jobs->add_subcommand("list", "List the jobs");
    jobs_list->add_option("--state", state, "open or done")
        ->type_name("STATE")
        ->check(oneOf({"open", "done"}));
    jobs_list->add_option("--count", count, "At most")->type_name("N");
    jobs_list->add_flag("--verbose", verbose, "Say more, with a \\ and a - and a 'quote'");
    auto* completion = app.add_subcommand("completion", "A script");
    completion->add_option("shell", shell, "The shell")
        ->type_name("SHELL")
        ->required()
        ->check(oneOf({"bash", "zsh"}));
    app.add_subcommand("__man", "Hidden")->group("");
    help->setExamples(&app, {{"tool jobs list", "the jobs"}});
    help->setExamples(jobs_list, {{"tool jobs list --state open", "the open jobs"}});
  }
};

}  // namespace wctmon::cli
