// Targets' command-line expressions: linear time whatever the expression and the line, bounded
// lines, RE2's reasons for what does not compile.
#include "core/cmdline_pattern.h"

#include <gtest/gtest.h>

#include <string>

namespace wctmon {
namespace {

CmdlinePattern compiled(const std::string& expression) {
  auto pattern = CmdlinePattern::compile(expression);
  EXPECT_TRUE(pattern.ok()) << expression;
  return std::move(pattern).value();
}

TEST(CmdlinePattern, AnExpressionIsSearchedAnywhereInTheLine) {
  const auto java = compiled(R"(java .*-jar api\.jar)");
  EXPECT_TRUE(java.search("/usr/bin/java -Xmx1g -jar api.jar --port 8080"));
  EXPECT_FALSE(java.search("/usr/bin/java -Xmx1g -jar apixjar"));
  EXPECT_TRUE(compiled("^/usr/sbin/nginx").search("/usr/sbin/nginx -g daemon off;"));
  EXPECT_FALSE(compiled("^nginx").search("/usr/sbin/nginx -g daemon off;"));
}

// std::regex recursed once per character: a command line of 28,000-40,000 characters after
// "java " overflowed the service's thread stack (SIGSEGV), which any local user could start.
TEST(CmdlinePattern, ACommandLineOfFortyThousandCharactersIsSearchedWithoutRecursion) {
  const auto pattern = compiled("java.*-Dapp=foo");
  std::string line = "java " + std::string(40000, 'x');
  EXPECT_FALSE(pattern.search(line));
  line.replace(1000, 9, "-Dapp=foo");
  EXPECT_TRUE(pattern.search(line));
}

// std::regex backtracked: "(a+)+$" against 41 characters froze every sample for over a minute.
TEST(CmdlinePattern, ANestedQuantifierTakesLinearTime) {
  const auto pattern = compiled("(a+)+$");
  EXPECT_FALSE(pattern.search(std::string(41, 'a') + "!"));
  EXPECT_FALSE(pattern.search(std::string(100000, 'a') + "!"));
  EXPECT_TRUE(pattern.search(std::string(41, 'a')));
}

TEST(CmdlinePattern, OnlyTheFirst32KiBOfALineAreSearched) {
  const auto pattern = compiled("-Dapp=foo");
  std::string line(CmdlinePattern::kMaxMatchedCmdline + 100, 'x');
  line.replace(CmdlinePattern::kMaxMatchedCmdline - 9, 9, "-Dapp=foo");
  EXPECT_TRUE(pattern.search(line));
  line.replace(CmdlinePattern::kMaxMatchedCmdline - 9, 9, std::string(9, 'x'));
  line.replace(CmdlinePattern::kMaxMatchedCmdline + 10, 9, "-Dapp=foo");
  EXPECT_FALSE(pattern.search(line));
  // Where the search stops is not the line's end.
  EXPECT_FALSE(compiled("x$").search(line));
  EXPECT_TRUE(compiled("x$").search(std::string(CmdlinePattern::kMaxMatchedCmdline, 'x')));
}

TEST(CmdlinePattern, WhatDoesNotCompileSaysWhy) {
  const auto unclosed = CmdlinePattern::compile("([");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_EQ(unclosed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unclosed.error().message.find("missing ]"), std::string::npos)
      << unclosed.error().message;
  // ECMAScript's lookahead and backreferences are not RE2's: they could not run in linear time.
  EXPECT_FALSE(CmdlinePattern::compile("java(?=.*api)").ok());
  EXPECT_FALSE(CmdlinePattern::compile(R"((a)\1)").ok());
}

}  // namespace
}  // namespace wctmon
