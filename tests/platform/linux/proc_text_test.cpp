#include "platform/linux/proc_text.h"

#include <gtest/gtest.h>

#include <string>

namespace wctmon::linux_platform {
namespace {

TEST(ProcText, StatWithSpacesAndParenthesesInTheName) {
  const auto s = parseStat(
      "1234 (a b) (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 98765 1000 100 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->comm, "a b) (c)");
  EXPECT_EQ(s->state, RunState::kSleeping);
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->pgrp, 1234);
  EXPECT_EQ(s->flags, 4194560U);
  EXPECT_EQ(s->start_time, 98765U);
  EXPECT_FALSE(parseStat("garbage").has_value());
  EXPECT_FALSE(parseStat("12 (x) S").has_value());
  // Decimal numbers as from_chars reads them: digits only, in range; any separator between.
  const auto stat = [](std::string_view flags, std::string_view start) {
    return parseStat("1 (x) S 1 1 1 0 -1 " + std::string(flags) + " 0 0 0 0 0 0 0 0 20 0 1 0 " +
                     std::string(start) + " 0 0");
  };
  EXPECT_EQ(stat("4294967295", "18446744073709551615")->flags, 4294967295U);
  EXPECT_EQ(stat("007", "18446744073709551615")->start_time, 18446744073709551615U);
  EXPECT_FALSE(stat("4294967296", "1").has_value());
  EXPECT_FALSE(stat("1", "18446744073709551616").has_value());
  EXPECT_FALSE(stat("+1", "1").has_value());
  EXPECT_FALSE(stat("-1", "1").has_value());
  EXPECT_FALSE(stat("1x", "1").has_value());
  const auto tabs = parseStat("1 (x)\tS 1 1  1 0 -1 5 0 0 0 0 0 0 0 0 20 0 1 0\t\t77\n");
  ASSERT_TRUE(tabs.has_value());
  EXPECT_EQ(tabs->flags, 5U);
  EXPECT_EQ(tabs->start_time, 77U);
}

TEST(ProcText, ProcessTitlesAreRewrittenCommandLinesOnly) {
  using namespace std::string_literals;
  EXPECT_EQ(processTitle("postgres: app db [local] UPDATE waiting\0\0\0\0"s),
            "postgres: app db [local] UPDATE waiting");
  EXPECT_EQ(processTitle("postgres: 15/main: checkpointer   \0"s),
            "postgres: 15/main: checkpointer");
  EXPECT_EQ(processTitle("nginx: worker process\0\0"s), "nginx: worker process");
  EXPECT_EQ(processTitle("sshd: root@pts/0"s), "sshd: root@pts/0");
  EXPECT_EQ(processTitle("my worker 3 of 8\0"s), "my worker 3 of 8");
  EXPECT_EQ(processTitle("/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/pg\0"s), "");
  EXPECT_EQ(processTitle("bash\0-c\0echo a b\0"s), "");
  EXPECT_EQ(processTitle("/opt/My App/bin/app\0"s), "");
  EXPECT_EQ(processTitle("cat\0"s), "");
  EXPECT_EQ(processTitle(""), "");
}

TEST(ProcText, SyscallLines) {
  auto running = parseSyscall("running\n");
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->kind, SyscallState::Kind::kRunning);

  auto outside = parseSyscall("-1 0x7ffd1 0x7f2\n");
  ASSERT_TRUE(outside.has_value());
  EXPECT_EQ(outside->kind, SyscallState::Kind::kNotInSyscall);

  auto futex = parseSyscall(
      "202 0x5569ba9a5168 0x189 0x3 0x0 0x0 0xffffffff 0x7f91645abe70 0x7f9164635e96\n");
  ASSERT_TRUE(futex.has_value());
  EXPECT_EQ(futex->kind, SyscallState::Kind::kInSyscall);
  EXPECT_EQ(futex->number, 202);
  EXPECT_EQ(futex->args[0], 0x5569ba9a5168U);
  EXPECT_EQ(futex->args[1], 0x189U);
  EXPECT_EQ(futex->args[5], 0xffffffffU);
  EXPECT_EQ(futex->sp, 0x7f91645abe70U);
  EXPECT_EQ(futex->pc, 0x7f9164635e96U);

  EXPECT_FALSE(parseSyscall("202 0x1 zz").has_value());
  // Hex as from_chars reads it: either case, leading zeros, nothing else, nothing too large.
  const auto upper = parseSyscall("202 0xABCdef 0x0 0x000000000000000F 0x0 0x0 0x0 0x7F 0x1\n");
  ASSERT_TRUE(upper.has_value());
  EXPECT_EQ(upper->args[0], 0xabcdefU);
  EXPECT_EQ(upper->args[2], 15U);
  EXPECT_EQ(upper->sp, 0x7fU);
  EXPECT_TRUE(parseSyscall("202 0xffffffffffffffff 0 0 0 0 0 0 0").has_value());
  EXPECT_FALSE(parseSyscall("202 0x10000000000000000 0 0 0 0 0 0 0").has_value());
  EXPECT_FALSE(parseSyscall("202 0x 0 0 0 0 0 0 0").has_value());
  EXPECT_FALSE(parseSyscall("202 0x1g 0 0 0 0 0 0 0").has_value());
  EXPECT_FALSE(parseSyscall("202 -0x1 0 0 0 0 0 0 0").has_value());
  EXPECT_FALSE(parseSyscall("").has_value());
}

TEST(ProcText, SchedstatRunCount) {
  EXPECT_EQ(parseSchedstatRuns("1276520 75168 5\n"), 5U);
  EXPECT_FALSE(parseSchedstatRuns("1 2").has_value());
  const auto times = parseSchedstat("1276520 75168 5\n");
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(times->cpu_ns, 1276520U);
  EXPECT_EQ(times->queued_ns, 75168U);
  EXPECT_EQ(times->runs, 5U);
  EXPECT_FALSE(parseSchedstat("1276520 x 5").has_value());
}

TEST(ProcText, LocksWithWaitersAndOfdAndFdinfoPrefix) {
  const auto locks = parseLocks(
      "1: POSIX  ADVISORY  WRITE 2260 00:1c:1234 0 99\n"
      "1: -> POSIX  ADVISORY  WRITE 2261 00:1c:1234 0 99\n"
      "2: FLOCK  ADVISORY  WRITE 300 fd:01:77 0 EOF\n"
      "3: OFDLCK ADVISORY  READ  -1 08:10:42 5 10\n"
      "not a lock line\n");
  ASSERT_EQ(locks.size(), 4U);
  EXPECT_FALSE(locks[0].waiter);
  EXPECT_TRUE(locks[1].waiter);
  EXPECT_EQ(locks[1].id, 1);
  EXPECT_EQ(locks[1].pid, 2261);
  EXPECT_EQ(locks[0].kind, "POSIX");
  EXPECT_TRUE(locks[0].write);
  EXPECT_EQ(locks[0].dev_major, 0U);
  EXPECT_EQ(locks[0].dev_minor, 0x1cU);
  EXPECT_EQ(locks[0].inode, 1234U);
  EXPECT_EQ(locks[0].end, 99U);
  EXPECT_EQ(locks[2].dev_major, 0xfdU);
  EXPECT_FALSE(locks[2].end.has_value());
  EXPECT_EQ(locks[3].pid, -1);
  EXPECT_FALSE(locks[3].write);
  EXPECT_EQ(locks[3].start, 5U);

  auto fdinfo = parseLockLine("lock:\t1: FLOCK  ADVISORY  WRITE 300 fd:01:77 0 EOF");
  ASSERT_TRUE(fdinfo.has_value());
  EXPECT_EQ(fdinfo->kind, "FLOCK");
  EXPECT_EQ(fdinfo->inode, 77U);
}

TEST(ProcText, StatusFields) {
  const std::string_view status = "Name:\tx\nTgid:\t4242\nPid:\t4243\nTracerPid:\t0\n";
  EXPECT_EQ(parseStatusField(status, "Tgid"), 4242);
  EXPECT_EQ(parseStatusField(status, "TracerPid"), 0);
  EXPECT_EQ(parseStatusField(status, "Pid"), 4243);
  EXPECT_FALSE(parseStatusField(status, "Ppid").has_value());
  EXPECT_FALSE(parseStatusField(status, "Name").has_value());
}

TEST(ProcText, StatusValuesWithSeveralNumbers) {
  const std::string_view status =
      "Uid:\t0\t26\t26\t26\nNSpid:\t4242\t7\nSigCgt:\t0000000000004a02\n";
  EXPECT_EQ(statusValue(status, "SigCgt"), "0000000000004a02");
  EXPECT_EQ(statusValue(status, "Gid"), "");
  EXPECT_EQ(numberAt(statusValue(status, "Uid"), 1), 26);
  EXPECT_EQ(numberAt(statusValue(status, "NSpid"), -1), 7) << "the innermost namespace's pid";
  EXPECT_EQ(numberAt(statusValue(status, "NSpid"), 0), 4242);
  EXPECT_FALSE(numberAt(statusValue(status, "NSpid"), 2).has_value());
  EXPECT_FALSE(numberAt("", -1).has_value());
}

TEST(ProcText, FdinfoFlagsAreOctal) {
  EXPECT_EQ(parseFdinfoFlags("pos:\t0\nflags:\t02000001\nmnt_id:\t15\n"), 02000001U);
  EXPECT_FALSE(parseFdinfoFlags("pos:\t0\n").has_value());
}

TEST(ProcText, FdinfoPosition) {
  EXPECT_EQ(parseFdinfoPos("pos:\t1000\nflags:\t02\nmnt_id:\t15\n"), 1000U);
  // "pos" must start a line: an fdinfo "lock:" line or another key does not count.
  EXPECT_FALSE(parseFdinfoPos("flags:\t02\nxpos:\t9\n").has_value());
}

TEST(ProcText, TheProcessorIsField39OfAStatLine) {
  const std::string_view line =
      "1234 (a b) 7) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 98765 1000 100 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 5 0 0 0 0 0";
  EXPECT_EQ(parseStatProcessor(line), 5);
  EXPECT_FALSE(parseStatProcessor(line.substr(0, line.find(" 17 5"))).has_value());
  EXPECT_FALSE(parseStatProcessor("garbage").has_value());
  // Found by the proc_stat fuzz target: a sign is no CPU number.
  std::string negative(line);
  negative.replace(negative.find(" 17 5") + 4, 1, "-045310");
  EXPECT_FALSE(parseStatProcessor(negative).has_value());
}

TEST(ProcText, SchedExecStartIsTheSchedulerClockInMilliseconds) {
  const std::string_view sched =
      "cat (19447, #threads: 1)\n"
      "-------------------------------------------------------------------\n"
      "se.exec_start                                :       1680369.534191\n"
      "se.vruntime                                  :        493689.242157\n";
  const auto start = parseSchedExecStart(sched);
  ASSERT_TRUE(start.has_value());
  EXPECT_DOUBLE_EQ(*start, 1680369.534191);
  EXPECT_FALSE(parseSchedExecStart("se.vruntime : 1.0\n").has_value());
  EXPECT_FALSE(parseSchedExecStart("se.exec_start : x\n").has_value());
  // So many digits that they make infinity (found by the proc_sched fuzz target).
  EXPECT_FALSE(parseSchedExecStart("se.exec_start : " + std::string(400, '7') + "\n").has_value());
}

TEST(ProcText, ALockRangeThatEndsBeforeItStartsIsNoLock) {
  // Found by the proc_locks fuzz target.
  EXPECT_FALSE(parseLockLine("3: POSIX  ADVISORY  WRITE 4242 fe:01:1234 200 199").has_value());
  EXPECT_TRUE(parseLockLine("3: POSIX  ADVISORY  WRITE 4242 fe:01:1234 200 200").has_value());
}

}  // namespace
}  // namespace wctmon::linux_platform
