#include "client/table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace wctmon::client {
namespace {

Table sample() {
  Table table({{"ID", false, true}, {"NAME", true}, {"SUMMARY", true}});
  table.add({"1", "short", "a deadlock of two threads in a process with a long name"});
  table.add({"12", "a-much-longer-process-name", "ok"});
  return table;
}

std::size_t longestLine(const std::string& text) {
  std::size_t longest = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::size_t columns = 0;
    for (const char c : line) columns += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
    longest = std::max(longest, columns);
  }
  return longest;
}

TEST(Table, WithoutAWidthNothingIsCut) {
  EXPECT_EQ(sample().render(std::nullopt),
            "ID  NAME                        SUMMARY\n"
            " 1  short                       a deadlock of two threads in a process with a long "
            "name\n"
            "12  a-much-longer-process-name  ok\n");
}

TEST(Table, AWidthCutsTheColumnsThatShrinkWidestFirst) {
  const auto text = sample().render(40);
  EXPECT_EQ(longestLine(text), 40U) << text;
  EXPECT_EQ(text,
            "ID  NAME               SUMMARY\n"
            " 1  short              a deadlock of tw…\n"
            "12  a-much-longer-pr…  ok\n");
  // Too narrow for the columns that do not shrink: each shrinking column keeps 8 columns.
  EXPECT_EQ(sample().render(10),
            "ID  NAME      SUMMARY\n"
            " 1  short     a deadl…\n"
            "12  a-much-…  ok\n");
}

TEST(Table, NoHeadersLeavesTheRowsAlone) {
  EXPECT_EQ(sample().render(std::nullopt, false),
            " 1  short                       a deadlock of two threads in a process with a long "
            "name\n"
            "12  a-much-longer-process-name  ok\n");
  Table narrow({{"A-LONG-HEADER"}, {"B"}});
  narrow.add({"x", "y"});
  EXPECT_EQ(narrow.render(std::nullopt, false), "x  y\n");
}

TEST(Table, CellsAreTerminalSafe) {
  Table table({{"NAME"}});
  table.add({"a\x1b[2Jb"});
  EXPECT_EQ(table.render(std::nullopt), "NAME\na\\x1b[2Jb\n");
}

}  // namespace
}  // namespace wctmon::client
