#include "cli/cli_args.h"

#include <gtest/gtest.h>

namespace wctmon::cli {
namespace {

TEST(CliArgs, EditDistanceCountsSwapsOfNeighboursAsOne) {
  EXPECT_EQ(editDistance("status", "status"), 0U);
  EXPECT_EQ(editDistance("stauts", "status"), 1U);
  EXPECT_EQ(editDistance("STATUS", "status"), 0U);
  EXPECT_EQ(editDistance("--limt", "--limit"), 1U);
  EXPECT_EQ(editDistance("icnidnet", "incident"), 2U);
  EXPECT_EQ(editDistance("", "abc"), 3U);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3U);
}

TEST(CliArgs, TheClosestWordOnlyWhenItLooksLikeASlip) {
  const std::vector<std::string> verbs = {"status", "incidents", "incident", "ps", "watch"};
  EXPECT_EQ(closestWord("stauts", verbs), "status");
  EXPECT_EQ(closestWord("incidnet", verbs), "incident");
  EXPECT_EQ(closestWord("incidnets", verbs), "incidents");
  EXPECT_EQ(closestWord("pss", verbs), "ps");
  EXPECT_FALSE(closestWord("frobnicate", verbs).has_value());
  EXPECT_FALSE(closestWord("xy", verbs).has_value());
  EXPECT_EQ(closestWord("--limt", {"--limit", "--pid"}), "--limit");
  EXPECT_EQ(didYouMean("wacth", verbs), " (did you mean 'watch'?)");
  EXPECT_EQ(didYouMean("zzz", verbs), "");
}

/// The usage error of `args` on a small command line like wctctl's.
std::string errorOf(std::vector<std::string> args) {
  CLI::App app{"tool", "tool"};
  app.require_subcommand(1);
  app.fallthrough();
  std::string output;
  app.add_option("-o,--output", output, "Format")->check(oneOf({"table", "json"}));
  auto* targets = app.add_subcommand("targets", "Targets");
  targets->require_subcommand(1);
  targets->add_subcommand("list", "List");
  targets->add_subcommand("remove", "Remove");
  auto* incidents = app.add_subcommand("incidents", "Incidents");
  int limit = 0;
  incidents->add_option("--limit", limit, "At most")->check(wholeNumber("a count", 0, 9));
  app.add_subcommand("__secret", "Hidden")->group("");
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return describeUsageError(app, "tool", e);
  }
  return "(parsed)";
}

TEST(CliArgs, UsageErrorsSayTheClosestCommandOrOption) {
  EXPECT_EQ(errorOf({"targts", "list"}),
            "unknown command 'targts' (did you mean 'targets'?); the commands are targets, "
            "incidents");
  EXPECT_EQ(errorOf({"frobnicate"}),
            "unknown command 'frobnicate'; the commands are targets, incidents");
  EXPECT_EQ(errorOf({"targets", "lsit"}),
            "unknown command 'targets lsit' (did you mean 'targets list'?); the commands of "
            "targets are list, remove");
  EXPECT_EQ(errorOf({"targets"}), "targets needs a command: list, remove");
  EXPECT_EQ(errorOf({"incidents", "--limt", "3"}),
            "unknown option '--limt' for incidents (did you mean '--limit'?); its options are "
            "--help, --limit");
  // An option of the commands above it counts: it falls through to them.
  EXPECT_EQ(errorOf({"incidents", "--otput", "json"}).find("(did you mean '--output'?)") !=
                std::string::npos,
            true);
  EXPECT_EQ(errorOf({"incidents", "-o", "jsno"}),
            "--output: expected table or json; got 'jsno' (did you mean 'json'?)");
  EXPECT_EQ(errorOf({"incidents", "--limit"}),
            "--limit: expected a count, a whole number from 0 to 9; got nothing");
  EXPECT_EQ(errorOf({}), "a command is required: targets, incidents (tool --help tells more)");
  EXPECT_EQ(errorOf({"incidents", "--limit", "3"}), "(parsed)");
}

TEST(CliArgs, TheWordsOfAOneOfAreThereForCompletion) {
  CLI::App app;
  std::string state;
  std::string name;
  auto* with_words = app.add_option("--state", state)->check(oneOf({"open", "resolved", "all"}));
  auto* without = app.add_option("--name", name)->check(wholeNumber("n", 0, 1));
  EXPECT_EQ(choicesOf(*with_words), (std::vector<std::string>{"open", "resolved", "all"}));
  EXPECT_TRUE(choicesOf(*without).empty());
}

}  // namespace
}  // namespace wctmon::cli
