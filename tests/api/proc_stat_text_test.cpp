// The fields of /proc/self/stat behind the process_* metrics,
// from canned text as the kernel writes it.
#include "api/proc_stat_text.h"

#include <gtest/gtest.h>

namespace wctmon::api {
namespace {

// Fields 14, 15 (utime, stime), 20 (threads), 22 (start), 23 (vsize) and 24 (rss) differ from
// every other field here, so that one taken from the wrong place shows.
constexpr const char* kStat =
    "4242 (wctmond) S 1 4242 4242 0 -1 4194560 2931 0 0 0 173 61 0 0 20 0 9 0 12345 "
    "734003200 6400 18446744073709551615 1 1 0 0 0 0 0 4096 16899 0 0 0 17 1 0 0 0 0 0 0 0 0 "
    "0 0 0 0 0\n";

TEST(ProcStatText, TheFieldsOfAStatLineAreReadByTheirPlaceInProc5) {
  const auto stat = parseSelfStat(kStat);
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->utime_ticks, 173U);
  EXPECT_EQ(stat->stime_ticks, 61U);
  EXPECT_EQ(stat->threads, 9U);
  EXPECT_EQ(stat->start_ticks, 12345U);
  EXPECT_EQ(stat->virtual_bytes, 734003200U);
  EXPECT_EQ(stat->resident_pages, 6400U);
}

TEST(ProcStatText, ANameWithSpacesAndParenthesesDoesNotShiftTheFields) {
  const auto stat = parseSelfStat(
      "77 (a) b (c)) R 1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 3 0 99 1000 7 0 0 0 0 0 0 0 0 0 0");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->utime_ticks, 5U);
  EXPECT_EQ(stat->threads, 3U);
  EXPECT_EQ(stat->start_ticks, 99U);
  EXPECT_EQ(stat->resident_pages, 7U);
}

TEST(ProcStatText, ACutOrDamagedLineIsNothing) {
  EXPECT_FALSE(parseSelfStat(""));
  EXPECT_FALSE(parseSelfStat("4242 wctmond S 1"));
  EXPECT_FALSE(parseSelfStat("4242 (wctmond) S 1 4242 4242 0 -1 4194560 2931 0 0 0 173"));
  EXPECT_FALSE(parseSelfStat(
      "1 (x) R 1 1 1 0 -1 0 0 0 0 0 x5 6 0 0 20 0 3 0 99 1000 7 0 0 0 0 0 0 0 0 0 0"));
  EXPECT_FALSE(parseSelfStat(
      "1 (x) R 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 3 0 99 1000 -7 0 0 0 0 0 0 0 0 0 0"));
}

}  // namespace
}  // namespace wctmon::api
