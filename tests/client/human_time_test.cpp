#include "client/human_time.h"

#include <gtest/gtest.h>

namespace wctmon::client {
namespace {

using namespace std::chrono_literals;

// 2026-11-27 10:00:01 UTC.
const std::chrono::system_clock::time_point kThen{std::chrono::seconds(1795773601)};

TEST(HumanTime, AgesAsTablesShowThem) {
  EXPECT_EQ(agoText(kThen, kThen + 300ms), "just now");
  EXPECT_EQ(agoText(kThen, kThen + 5s + 400ms), "5s ago");
  EXPECT_EQ(agoText(kThen, kThen + 3min), "3m ago");
  EXPECT_EQ(agoText(kThen, kThen + 3min + 59s), "3m ago");
  EXPECT_EQ(agoText(kThen, kThen + 2h + 5min + 9s), "2h05m ago");
  EXPECT_EQ(agoText(kThen, kThen + 49h), "2d01h ago");
  // A server whose clock runs ahead.
  EXPECT_EQ(agoText(kThen + 4s, kThen), "in 4s");
}

TEST(HumanTime, TimesAreUtcAndSaySo) {
  EXPECT_EQ(utcTimeText(kThen), "2026-11-27 10:00:01 UTC");
  EXPECT_EQ(utcTimeText(kThen + 999ms), "2026-11-27 10:00:01 UTC");
  EXPECT_EQ(timeAndAgo(kThen, kThen + 5s), "2026-11-27 10:00:01 UTC (5s ago)");
  // Before 1970 and at its first second.
  EXPECT_EQ(utcTimeText(std::chrono::system_clock::time_point{}), "1970-01-01 00:00:00 UTC");
}

}  // namespace
}  // namespace wctmon::client
