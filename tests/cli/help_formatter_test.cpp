#include "cli/help_formatter.h"

#include <gtest/gtest.h>

#include "cli/toy_app.h"

namespace wctmon::cli {
namespace {

/// What `tool ARGS --help` prints.
std::string helpOf(std::vector<std::string> args) {
  ToyApp toy;
  args.push_back("--help");
  std::reverse(args.begin(), args.end());
  try {
    toy.app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::string help;
    CLI::App* at = &toy.app;
    std::string name = "tool";
    while (!at->get_subcommands().empty()) {
      at = at->get_subcommands().front();
      name += " " + at->get_name();
    }
    return at->help(name.substr(0, name.rfind(' ')));
  }
  return "(no help)";
}

TEST(HelpFormatter, ACommandsHelpHasItsOptionsTheGlobalOnesAndExamples) {
  const auto help = helpOf({"jobs", "list"});
  EXPECT_NE(help.find("Usage: tool jobs list [OPTIONS]"), std::string::npos) << help;
  EXPECT_NE(help.find("--state STATE"), std::string::npos) << help;
  const auto global = help.find("Global options (before or after the command):");
  ASSERT_NE(global, std::string::npos) << help;
  EXPECT_NE(help.find("-o,--output", global), std::string::npos) << help;
  EXPECT_NE(help.find("--token-file FILE", global), std::string::npos) << help;
  EXPECT_NE(help.find("Examples:\n  tool jobs list --state open\n      the open jobs\n"),
            std::string::npos)
      << help;
}

TEST(HelpFormatter, TheTopHelpListsTheCommandsButNotTheHiddenOnes) {
  const auto help = helpOf({});
  EXPECT_NE(help.find("jobs"), std::string::npos) << help;
  EXPECT_NE(help.find("completion"), std::string::npos) << help;
  EXPECT_EQ(help.find("__man"), std::string::npos) << help;
  EXPECT_EQ(help.find("Global options"), std::string::npos) << help;
  EXPECT_NE(help.find("Examples:\n  tool jobs list\n      the jobs\n"), std::string::npos) << help;
}

}  // namespace
}  // namespace wctmon::cli
