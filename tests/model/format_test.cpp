#include "model/format.h"

#include <gtest/gtest.h>

namespace wctmon {
namespace {

TEST(Format, CountsReadAsEnglish) {
  EXPECT_EQ(countOf(1, "thread"), "1 thread");
  EXPECT_EQ(countOf(0, "thread"), "0 threads");
  EXPECT_EQ(countOf(2, "deadlock"), "2 deadlocks");
  EXPECT_EQ(countOf(3, "process"), "3 processes");
  EXPECT_EQ(countOf(1, "process"), "1 process");
}

TEST(Format, DurationsReadAsPeopleWriteThem) {
  using std::chrono::milliseconds;
  EXPECT_EQ(durationText(milliseconds(850)), "850ms");
  EXPECT_EQ(durationText(milliseconds(12'300)), "12s");
  EXPECT_EQ(durationText(milliseconds(133'000)), "2m13s");
  EXPECT_EQ(durationText(milliseconds(65'000)), "1m05s");
  EXPECT_EQ(durationText(std::chrono::hours(3) + std::chrono::minutes(5)), "3h05m");
  EXPECT_EQ(durationText(std::chrono::hours(52)), "2d04h");
  EXPECT_EQ(durationText(milliseconds(-5)), "0ms");
}

}  // namespace
}  // namespace wctmon
