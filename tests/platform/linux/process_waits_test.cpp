// What a wait that another process ends is: a parent's wait for its children (wait4, waitid)
// from canned stat text, and a SysV semaphore wait from canned memory (struct sembuf) and semctl
// answers.
#include "platform/linux/process_waits.h"

#include <gtest/gtest.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdint>
#include <vector>

#include "platform/linux/fake_process.h"

namespace wctmon::linux_platform {
namespace {

using namespace testing;
using std::chrono::milliseconds;

class ProcessWaitsTest : public WaitClassifierTest {};

// --- children ------------------------------------------------------------------------------

TEST_F(ProcessWaitsTest, WaitpidWaitsOnTheChildrenItCanReap) {
  process_.children_of = {Pid{5001}, Pid{5002}, Pid{5003}};
  process_.stat[kPid.value] = statLine(kPid.value, "parent", 'S', 500, 0x400040, 1, 4242);
  process_.stat[5001] = statLine(5001, "a", 'S', 500, 0x400040, 4242, 4242);
  process_.stat[5002] = statLine(5002, "b", 'S', 500, 0x400040, 4242, 5002);
  process_.stat[5003] = statLine(5003, "c", 'S', 500, 0x400040, 4242, 5002);

  auto w = waitOf(syscallLine(SYS_wait4, {5002}));
  EXPECT_EQ(w.type, ObjectType::kProcessWait);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "process 5002");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5002}}));
  EXPECT_EQ(w.detail.str(), "1 child process(es) can end this wait");
  EXPECT_EQ(w.key, 5002U | (std::uint64_t{1} << 40));

  w = waitOf(syscallLine(SYS_wait4, {static_cast<std::uint64_t>(-1)}));
  EXPECT_EQ(w.name, "any child process");
  EXPECT_EQ(w.owner_processes.size(), 3U);

  w = waitOf(syscallLine(SYS_wait4, {0}));  // its own process group
  EXPECT_EQ(w.name, "process group 4242");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5001}}));

  w = waitOf(syscallLine(SYS_wait4, {static_cast<std::uint64_t>(-5002)}));
  EXPECT_EQ(w.name, "process group 5002");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5002}, Pid{5003}}));

  w = waitOf(syscallLine(SYS_waitid, {P_PID, 5003}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5003}}));
  w = waitOf(syscallLine(SYS_waitid, {P_ALL, 0}));
  EXPECT_EQ(w.owner_processes.size(), 3U);

  w = waitOf(syscallLine(SYS_wait4, {6000}));  // not a child
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_TRUE(w.owner_processes.empty());
}

// --- SysV semaphores -----------------------------------------------------------------------

TEST_F(ProcessWaitsTest, ASysvSemaphoreWaitNamesTheSemaphoresItWaitsOnAndWhoLastOperated) {
  // Takes semaphore 2 (twice), waits for 0 to be zero, gives 1 back: it waits on 0 and 2.
  const sembuf ops[] = {{2, -1, 0}, {0, 0, 0}, {1, 1, 0}, {2, -1, SEM_UNDO}};
  process_.place(kArena + 0xd00, ops);
  process_.semaphore_pids[{7, 2}] = 5100;
  auto w = waitOf(syscallLine(SYS_semop, {7, kArena + 0xd00, 4}));
  EXPECT_EQ(w.type, ObjectType::kUnownedLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "SysV semaphore set 7, semaphores 0 and 2");
  EXPECT_EQ(w.detail.str(),
            "a SysV semaphore records no owner; last operated on: semaphore 2 by pid 5100");
  EXPECT_TRUE(w.owner_processes.empty());
  EXPECT_EQ(w.key, 7U | (std::uint64_t{3} << 40));
  EXPECT_FALSE(w.timeout.has_value());

  // semtimedop: a relative timeout.
  process_.place(kArena + 0xe00, timespec{1, 500'000'000});
  w = waitOf(syscallLine(SYS_semtimedop, {7, kArena + 0xd00, 1, kArena + 0xe00}));
  EXPECT_EQ(w.name, "SysV semaphore set 7, semaphore 2");
  EXPECT_EQ(w.timeout, milliseconds(1500));

  // Operations that cannot be read name the set alone.
  w = waitOf(syscallLine(SYS_semop, {7, 0x10, 1}));
  EXPECT_EQ(w.name, "SysV semaphore set 7");
  EXPECT_EQ(w.detail.str(), "a SysV semaphore records no owner");
}

}  // namespace
}  // namespace wctmon::linux_platform
