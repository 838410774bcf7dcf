// What a thread blocked on a descriptor waits for, from canned /proc text (fdinfo, /proc/locks)
// and memory (struct flock, paths): file locks and their holders, pipes, FIFOs, Unix sockets and
// descriptors nobody owns.
#include "platform/linux/descriptor_waits.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/syscall.h>

#include <vector>

#include "platform/linux/fake_process.h"

namespace wctmon::linux_platform {
namespace {

using namespace testing;
using std::chrono::milliseconds;

class DescriptorWaitsTest : public WaitClassifierTest {};

// --- file locks ----------------------------------------------------------------------------

class FileLockTest : public DescriptorWaitsTest {
 protected:
  FileLockTest() {
    process_.fd(3, "/srv/data", FdTarget::Kind::kFile, 77);
    process_.fdinfo[3] = "pos:\t200\nflags:\t02\nmnt_id:\t15\n";
    process_.file_sizes[3] = 1000;
  }

  /// Where the waiter's struct flock lies.
  std::uint64_t flockArgument(std::int16_t type, std::int16_t whence, std::int64_t start,
                              std::int64_t len) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = whence;
    lock.l_start = start;
    lock.l_len = len;
    process_.place(kArena + 0x900, lock);
    return kArena + 0x900;
  }
};

TEST_F(FileLockTest, AnFcntlLockWaitIsOwnedByTheProcessHoldingTheRange) {
  process_.proc_locks =
      "1: POSIX  ADVISORY  WRITE 5000 fe:00:77 100 109\n"
      "1: -> POSIX  ADVISORY  WRITE 4242 fe:00:77 100 109\n"
      "2: POSIX  ADVISORY  READ  5100 fe:00:77 0 9\n";
  const auto w =
      waitOf(syscallLine(SYS_fcntl, {3, F_SETLKW, flockArgument(F_WRLCK, SEEK_SET, 100, 10)}));
  EXPECT_EQ(w.type, ObjectType::kFileLock);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "/srv/data [100-109]");
  EXPECT_EQ(w.detail.str(), "POSIX write lock; waiting for write");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5000}}));
  EXPECT_EQ(w.key, 77U);
}

TEST_F(FileLockTest, RangesFromTheCurrentPositionAndTheEndOfTheFile) {
  process_.proc_locks =
      "1: POSIX  ADVISORY  WRITE 5000 fe:00:77 200 204\n"
      "1: -> POSIX  ADVISORY  WRITE 4242 fe:00:77 200 204\n"
      "2: POSIX  ADVISORY  WRITE 5001 fe:00:77 990 EOF\n"
      "2: -> POSIX  ADVISORY  READ  4242 fe:00:77 990 EOF\n";
  auto w = waitOf(syscallLine(SYS_fcntl, {3, F_SETLKW, flockArgument(F_WRLCK, SEEK_CUR, 0, 5)}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5000}}));  // from fdinfo's pos 200
  w = waitOf(syscallLine(SYS_fcntl, {3, F_SETLKW, flockArgument(F_RDLCK, SEEK_END, -10, 0)}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5001}}));  // from the size, 1000
  EXPECT_EQ(w.name, "/srv/data [990-EOF]");
  EXPECT_EQ(w.detail.str(), "POSIX write lock; waiting for read");
}

TEST_F(FileLockTest, OfdAndFlockLocksBelongToWhoeverHoldsTheOpenFile) {
  process_.proc_locks =
      "1: OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"
      "1: -> OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"
      "2: FLOCK  ADVISORY  WRITE 5000 fe:00:77 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 4242 fe:00:77 0 EOF\n";
  process_.held = {{Pid{5000}, "/srv/data",
                    "pos:\t0\nflags:\t02\nlock:\t2: FLOCK  ADVISORY  WRITE 5000 fe:00:77 0 EOF\n"},
                   {Pid{5100}, "/srv/data",
                    "pos:\t0\nflags:\t02\nlock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"},
                   {Pid{5200}, "/srv/data", "pos:\t0\nflags:\t02\n"}};
  auto w = waitOf(
      syscallLine(SYS_fcntl, {3, 38 /* F_OFD_SETLKW */, flockArgument(F_WRLCK, SEEK_SET, 0, 10)}));
  EXPECT_EQ(w.name, "/srv/data [0-9]");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5100}}));
  w = waitOf(syscallLine(SYS_flock, {3, LOCK_EX}));
  EXPECT_EQ(w.name, "/srv/data [0-EOF]");
  EXPECT_EQ(w.detail.str(), "FLOCK write lock; waiting for write");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5000}}));
}

TEST_F(FileLockTest, ARequestMissingFromProcLocksOrAnUnreadableDescriptorIsSaid) {
  auto w = waitOf(syscallLine(SYS_flock, {3, LOCK_EX}));
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "/srv/data");
  EXPECT_EQ(w.detail.str(), "the blocked request is not in /proc/locks");
  w = waitOf(syscallLine(SYS_flock, {9, LOCK_SH}));
  EXPECT_EQ(w.type, ObjectType::kFileLock);
  EXPECT_EQ(w.status, ObjectStatus::kError);
  EXPECT_EQ(w.name, "fd 9");
  // Another fcntl command does not block on a lock.
  w = waitOf(syscallLine(SYS_fcntl, {3, F_GETFL}));
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.name, "fcntl");
}

// --- pipes, FIFOs, sockets and other descriptors -------------------------------------------

TEST_F(DescriptorWaitsTest, APipeReaderWaitsOnTheWritersAndAWriterOnTheReaders) {
  process_.fd(5, "pipe:[555]", FdTarget::Kind::kPipe, 555);
  process_.held = {{Pid{4242}, "pipe:[555]", "flags:\t00\n"},
                   {Pid{6000}, "pipe:[555]", "flags:\t01\n"},
                   {Pid{6001}, "pipe:[555]", "flags:\t02000001\n"},
                   {Pid{6002}, "pipe:[556]", "flags:\t01\n"}};
  auto w = waitOf(syscallLine(SYS_read, {5, kArena, 1}));
  EXPECT_EQ(w.type, ObjectType::kPipe);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "pipe:[555]");
  EXPECT_EQ(w.key, 555U);
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{6000}, Pid{6001}}));
  EXPECT_EQ(w.detail.str(), "read on an empty pipe; the holders of its write end can end it");

  w = waitOf(syscallLine(SYS_writev, {5, kArena, 1}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{4242}}));
  EXPECT_EQ(w.detail.str(), "write to a full pipe; the holders of its read end can end it");

  process_.fd(6, "/tmp/fifo", FdTarget::Kind::kFifo, 600);
  w = waitOf(syscallLine(SYS_read, {6, kArena, 1}));
  EXPECT_EQ(w.type, ObjectType::kPipe);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);  // nobody can write
  EXPECT_TRUE(w.owner_processes.empty());
}

TEST_F(DescriptorWaitsTest, AConnectedUnixSocketWaitsOnThePeersHolders) {
  process_.fd(7, "socket:[777]", FdTarget::Kind::kSocket, 777);
  process_.unix_peers[777] = 778;
  process_.held = {{Pid{6100}, "socket:[778]", "flags:\t02\n"}};
  auto w = waitOf(syscallLine(SYS_recvfrom, {7, kArena, 16}));
  EXPECT_EQ(w.type, ObjectType::kUnixSocket);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "socket:[777] <-> socket:[778]");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{6100}}));
  EXPECT_EQ(w.key, 777U);

  process_.fd(8, "socket:[888]", FdTarget::Kind::kSocket, 888);  // TCP: no Unix peer
  w = waitOf(syscallLine(SYS_sendto, {8, kArena, 16}));
  EXPECT_EQ(w.type, ObjectType::kSocketIo);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.detail.str(), "send on a socket");

  w = waitOf(syscallLine(SYS_accept4, {8, 0, 0}));
  EXPECT_EQ(w.type, ObjectType::kSocketIo);
  EXPECT_EQ(w.name, "socket:[888]");
  EXPECT_EQ(w.detail.str(), "accept");
  w = waitOf(syscallLine(SYS_connect, {11, 0, 0}));
  EXPECT_EQ(w.name, "fd 11");
  EXPECT_EQ(w.detail.str(), "connect");
}

TEST_F(DescriptorWaitsTest, EventTimerAndSignalDescriptorsAndUnreadableOnes) {
  process_.fd(3, "anon_inode:[eventfd]", FdTarget::Kind::kEventfd, 30);
  process_.fd(4, "anon_inode:[signalfd]", FdTarget::Kind::kSignalfd, 40);
  process_.fd(5, "anon_inode:[timerfd]", FdTarget::Kind::kTimerfd, 50);
  process_.fd(6, "/dev/ttyS0", FdTarget::Kind::kFile, 60);
  EXPECT_EQ(waitOf(syscallLine(SYS_read, {3})).type, ObjectType::kEventfd);
  EXPECT_EQ(waitOf(syscallLine(SYS_read, {4})).type, ObjectType::kSignalWait);
  EXPECT_EQ(waitOf(syscallLine(SYS_read, {5})).type, ObjectType::kSleep);
  auto w = waitOf(syscallLine(SYS_read, {6}));
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.name, "/dev/ttyS0");
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  w = waitOf(syscallLine(SYS_read, {12}));
  EXPECT_EQ(w.status, ObjectStatus::kError);
  EXPECT_EQ(w.name, "fd 12");
  EXPECT_EQ(w.detail.str(), "descriptor not readable");
}

TEST_F(DescriptorWaitsTest, OpeningAFifoWaitsForItsOtherEnd) {
  process_.placeString(kArena + 0xa00, "/run/app.fifo");
  process_.placeString(kArena + 0xb00, "relative.fifo");
  process_.fifos["-100:/run/app.fifo"] = 900;
  process_.fifos["9:relative.fifo"] = 901;
  auto w = waitOf(
      syscallLine(SYS_openat, {static_cast<std::uint64_t>(AT_FDCWD), kArena + 0xa00, O_RDONLY}));
  EXPECT_EQ(w.type, ObjectType::kFifoOpen);
  EXPECT_EQ(w.name, "/run/app.fifo");
  EXPECT_EQ(w.key, 900U);
  EXPECT_EQ(w.detail.str(), "opening a FIFO for reading: waits until a writer opens it");
  w = waitOf(syscallLine(SYS_openat, {9, kArena + 0xb00, O_WRONLY}));
  EXPECT_EQ(w.key, 901U);
  EXPECT_EQ(w.detail.str(), "opening a FIFO for writing: waits until a reader opens it");
  w = waitOf(syscallLine(SYS_open, {kArena + 0xa00, O_WRONLY}));
  EXPECT_EQ(w.type, ObjectType::kFifoOpen);

  w = waitOf(syscallLine(SYS_openat, {9, kArena + 0xa00, O_RDONLY}));  // not a FIFO from there
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.detail.str(), "blocked in open()");
  w = waitOf(syscallLine(SYS_open, {0x10, O_RDONLY}));
  EXPECT_EQ(w.name, "open");
  EXPECT_EQ(w.detail.str(), "blocked in open(); the path is not readable");
}

}  // namespace
}  // namespace wctmon::linux_platform
