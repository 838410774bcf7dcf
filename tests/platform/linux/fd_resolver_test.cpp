// What a blocked lock call asks for, as /proc/locks prints it.
#include "platform/linux/fd_resolver.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/sysmacros.h>

#include <limits>

namespace wctmon::linux_platform {
namespace {

TEST(LockRequest, FcntlRangesAreAbsoluteAsTheKernelMakesThem) {
  const auto set = fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_SET, 100, 10}, 0, 0);
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->kind, "POSIX");
  EXPECT_TRUE(set->write);
  EXPECT_EQ(set->start, 100U);
  EXPECT_EQ(set->end, 109U);

  // SEEK_CUR from the descriptor's offset, SEEK_END from the file's size.
  const auto cur = fcntlLockRequest(true, FlockArgument{F_RDLCK, SEEK_CUR, 0, 10}, 1000, 0);
  ASSERT_TRUE(cur.has_value());
  EXPECT_EQ(cur->kind, "OFDLCK");
  EXPECT_FALSE(cur->write);
  EXPECT_EQ(cur->start, 1000U);
  EXPECT_EQ(cur->end, 1009U);
  const auto end = fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_END, -4, 0}, 0, 64);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->start, 60U);
  EXPECT_FALSE(end->end.has_value());  // length 0: to EOF

  // A negative length reaches back from the start.
  const auto back = fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_SET, 100, -10}, 0, 0);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->start, 90U);
  EXPECT_EQ(back->end, 99U);
  EXPECT_FALSE(fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_SET, 5, -10}, 0, 0));
  EXPECT_FALSE(fcntlLockRequest(false, FlockArgument{F_WRLCK, 7, 0, 0}, 0, 0));
  // Whatever the target's memory holds, nothing overflows.
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_FALSE(fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_SET, kMax, 10}, 0, 0));
  EXPECT_FALSE(fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_CUR, kMax, 0}, 10, 0));
  EXPECT_FALSE(fcntlLockRequest(false, FlockArgument{F_WRLCK, SEEK_SET, -kMax, -1}, 0, 0));
}

TEST(LockRequest, FlockIsTheWholeFile) {
  const auto ex = flockRequest(LOCK_EX);
  EXPECT_EQ(ex.kind, "FLOCK");
  EXPECT_TRUE(ex.write);
  EXPECT_EQ(ex.start, 0U);
  EXPECT_FALSE(ex.end.has_value());
  EXPECT_FALSE(flockRequest(LOCK_SH).write);
}

TEST(LockRequest, AWaiterIsMatchedByWhatItAsksNotByPidAlone) {
  // Two OFD waiters on one file, both pid -1: the one asking for [0-9] is blocked by lock 2.
  const auto locks = parseLocks(
      "1: OFDLCK ADVISORY  WRITE -1 fe:00:77 100 109\n"
      "1: -> OFDLCK ADVISORY  WRITE -1 fe:00:77 100 109\n"
      "2: OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"
      "2: -> OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n");
  FdTarget target;
  target.kind = FdTarget::Kind::kFile;
  target.link = "/tmp/f";
  target.dev = makedev(0xfe, 0);
  target.inode = 77;
  FdHolderIndex index;
  LockRequest low;
  low.kind = "OFDLCK";
  low.write = true;
  low.start = 0;
  low.end = 9;
  const auto wait = resolveFileLockWait(Pid{1}, target, low, locks, index);
  EXPECT_TRUE(wait.found);
  EXPECT_EQ(wait.name, "/tmp/f [0-9]");
}

}  // namespace
}  // namespace wctmon::linux_platform
