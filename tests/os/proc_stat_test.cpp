// The boot time of /proc/stat, from canned text as the kernel writes it.
#include "os/proc_stat.h"

#include <gtest/gtest.h>

namespace wctmon {
namespace {

TEST(ProcStat, TheBootTimeIsTheBtimeLine) {
  // After the CPUs and the interrupts, which grow with the machine.
  EXPECT_EQ(parseBootTime("cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 123 0 0 1\nctxt 99\n"
                          "btime 1764150000\nprocesses 4242\n"),
            1764150000);
  EXPECT_EQ(parseBootTime("btime 7"), 7);
  EXPECT_EQ(parseBootTime("btime 42"), 42);  // the last line, without its newline
  EXPECT_FALSE(parseBootTime("cpu 1 2\nprocesses 3\n").has_value());
  EXPECT_FALSE(parseBootTime("btime x\n").has_value());
  EXPECT_FALSE(parseBootTime("btime soon\n").has_value());
  // Only a line that starts with it, and with it whole.
  EXPECT_FALSE(parseBootTime("xbtime 5\n").has_value());
  EXPECT_FALSE(parseBootTime("cpu  1 2 3 4\nbtimes 5\n").has_value());
}

}  // namespace
}  // namespace wctmon
