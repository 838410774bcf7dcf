// What a futex wait is, classified from canned process memory and call sites: glibc mutexes,
// rwlocks, joins and condition variables with their owners, timeouts on each clock, a call site
// found on the stack, a thread parked after a priority-inheritance EDEADLK, unreadable memory.
#include "platform/linux/futex_waits.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>

#include <cstddef>
#include <set>
#include <vector>

#include "model/format.h"
#include "platform/linux/fake_process.h"

namespace wctmon::linux_platform {
namespace {

using namespace testing;
using std::chrono::milliseconds;

class FutexWaitsTest : public WaitClassifierTest {};

// --- futexes: glibc objects in the process's memory ----------------------------------------

TEST_F(FutexWaitsTest, AContendedMutexIsOwnedByTheThreadInItsOwnerField) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.name, hexString(kArena + 0x100));
  EXPECT_EQ(w.key, kArena + 0x100);
  EXPECT_EQ(w.detail.str(), "pthread_mutex (normal)");
  EXPECT_TRUE(w.alertable);  // S: a signal interrupts it
  EXPECT_FALSE(w.timeout.has_value());
}

/// A process-shared mutex, locked with waiters, whose word names thread 7001 of process 7000 as
/// its owner.
pthread_mutex_t sharedMutexOfThread7001() {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_t m;
  pthread_mutex_init(&m, &attr);
  m.__data.__lock = 2;
  m.__data.__owner = 7001;
  return m;
}

TEST_F(FutexWaitsTest, AProcessSharedMutexOwnerIsFoundInAnotherProcessByItsStatus) {
  process_.place(kArena + 0x100, sharedMutexOfThread7001());
  process_.status[7001] = "Name:\tother\nTgid:\t7000\nPid:\t7001\n";
  const auto w = waitOf(futex(kArena + 0x100, 0, 2));  // shared: no private flag
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{Pid{7000}, Tid{7001}}}));
}

TEST_F(FutexWaitsTest, AProcessSharedOwnerOfAProcessThatDoesNotMapTheLockIsNoOwner) {
  // The word written by hand: process 7000 maps nothing of this one.
  process_.place(kArena + 0x100, sharedMutexOfThread7001());
  process_.status[7001] = "Name:\tcat\nTgid:\t7000\nPid:\t7001\n";
  process_.sharing = std::set<std::int32_t>{};
  const auto w = waitOf(futex(kArena + 0x100, 0, 2));
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_NE(w.detail.str().find("its word names thread 7001 of process 7000, which does not map "
                                "this lock's memory: no evidence of an owner"),
            std::string::npos)
      << w.detail.str();
  process_.sharing = std::set<std::int32_t>{7000};
  EXPECT_EQ(waitOf(futex(kArena + 0x100, 0, 2)).owner_threads,
            (std::vector<ThreadRef>{{Pid{7000}, Tid{7001}}}));
}

TEST_F(FutexWaitsTest, AnOwnerInAPidNamespaceIsNamedByTheServicesThreadId) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = 3;  // the namespace's number of thread kOwner
  process_.place(kArena + 0x100, m);
  process_.namespace_tids = {{1, kPid.value}, {3, kOwner}};
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));

  m.__data.__owner = 4;  // no thread of the namespace has that number
  process_.place(kArena + 0x100, m);
  const auto gone = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(gone.status, ObjectStatus::kAbandoned);
  EXPECT_TRUE(gone.owner_threads.empty());
}

TEST_F(FutexWaitsTest, AMutexWhoseOwnerExitedIsAbandoned) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = 4999;  // no such thread anywhere
  process_.place(kArena + 0x100, m);
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_EQ(w.detail.str(), "pthread_mutex (normal), owner thread 4999 has exited");
}

TEST_F(FutexWaitsTest, AMutexInheritedLockedThroughForkNamesTheParentsThread) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = 4101;
  process_.place(kArena + 0x100, m);
  process_.status[4101] = "Tgid:\t4100\n";
  process_.stat[kPid.value] = statLine(kPid.value, "child", 'S', 500, 0x400040, 4100);
  auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_EQ(w.detail.str(),
            "pthread_mutex (normal), inherited locked through fork(): its owner, thread 4101, "
            "lives in the "
            "parent process 4100, not in this one, so nothing here can unlock it");

  process_.stat[kPid.value] = statLine(kPid.value, "child", 'S', 500, 0x400040, 1);
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(
      w.detail.str(),
      "pthread_mutex (normal), owner thread 4101 is not in this process (it is a thread of process "
      "4100), so nothing here can unlock it");
}

TEST_F(FutexWaitsTest, APriorityInheritanceMutexOwnerComesFromTheWord) {
  process_.place(kArena + 0x100, static_cast<std::uint32_t>(kOwner));
  const auto w = waitOf(futex(kArena + 0x100, kFutexLockPiPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.detail.str(), "priority-inheritance mutex");
}

TEST_F(FutexWaitsTest, APriorityInheritanceLockTimesOutAtAnAbsoluteTime) {
  process_.place(kArena + 0x100, static_cast<std::uint32_t>(kOwner));
  process_.place(kArena + 0x800, timespec{1003, 250'000'000});
  process_.clocks[CLOCK_REALTIME] = std::chrono::seconds(1000);
  process_.clocks[CLOCK_MONOTONIC] = std::chrono::seconds(1002);
  // FUTEX_LOCK_PI: CLOCK_REALTIME, whatever the flags say (pthread_mutex_timedlock).
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexLockPiPrivate, 0, kArena + 0x800)).timeout,
            milliseconds(3250));
  // FUTEX_LOCK_PI2: the clock its flags name (pthread_mutex_clocklock).
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexLockPi2Private, 0, kArena + 0x800)).timeout,
            milliseconds(1250));
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexLockPi2PrivateRealtime, 0, kArena + 0x800)).timeout,
            milliseconds(3250));
}

TEST_F(FutexWaitsTest, ARwlockHeldForWritingIsOwnedByTheWriter) {
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  rw.__data.__readers = 1 | 2;  // write phase, write-locked
  rw.__data.__cur_writer = kOwner;
  process_.place(kArena + 0x200, rw);
  const std::uint64_t word = kArena + 0x200 + offsetof(__pthread_rwlock_arch_t, __wrphase_futex);
  process_.call_sites[kSyscallPc] = {CallSiteRole::kRwLockRead, "pthread_rwlock"};
  const auto w = waitOf(futex(word, kFutexWaitBitsetPrivate, 1));
  EXPECT_EQ(w.type, ObjectType::kRwLock);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.name, hexString(kArena + 0x200));  // the lock, not the word inside it
  EXPECT_EQ(w.key, word);
}

TEST_F(FutexWaitsTest, ARwlockHeldForReadingHasNoKnownOwner) {
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  rw.__data.__readers = 2 << 3;  // two readers
  process_.place(kArena + 0x200, rw);
  const std::uint64_t word = kArena + 0x200 + offsetof(__pthread_rwlock_arch_t, __wrphase_futex);
  process_.call_sites[kSyscallPc] = {CallSiteRole::kRwLockWrite, "pthread_rwlock"};
  auto w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kRwLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_EQ(w.detail.str(),
            "pthread_rwlock held for reading by 2 reader(s); readers are not recorded, owner "
            "unknown");
  // The same words waited on from pthread_cond_wait are a condition variable's (the fields of a
  // mutex + condition variable + zeroes, as HotSpot's Parker lays them out, look so), and from
  // code without symbols they are not said to be a rwlock either.
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_wait"};
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "pthread_cond_wait " + hexString(word));
  process_.call_sites.clear();
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
}

TEST_F(FutexWaitsTest, ATimedFutexWaitGoingOnAsRestartSyscallIsStillThatWait) {
  // After a stop or a signal a timed wait continues as restart_syscall, the futex call's
  // arguments still in their registers.
  const std::uint64_t word = kArena + 0x300;
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_timedwait"};
  auto w = waitOf(syscallLine(SYS_restart_syscall, {word, kFutexWaitBitsetPrivate, 0, 0}));
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.name, "pthread_cond_timedwait " + hexString(word));
  // Not in a futex call site (a restarted nanosleep, poll): not taken for a futex.
  process_.call_sites.clear();
  w = waitOf(syscallLine(SYS_restart_syscall, {word, kFutexWaitBitsetPrivate, 0, 0}));
  EXPECT_NE(w.type, ObjectType::kFutex);
  EXPECT_NE(w.type, ObjectType::kCondition);
}

TEST_F(FutexWaitsTest, TheCallSiteIsTheInnermostReturnAddressOnTheStackThatIsOne) {
  // Futex wrappers between the call site and the system call have no site of their own.
  const std::uint64_t frames[] = {0x1234, kArena + 0x10, kReturnAddress, kSyscallPc};
  process_.place(kArena + 0x1000, frames);
  process_.call_sites[kReturnAddress] = {CallSiteRole::kUnownedLock, "Rust std::sync::Mutex"};
  process_.call_sites[kSyscallPc + 1] = {CallSiteRole::kCondition, "Rust thread park"};
  const auto w =
      waitOf(syscallLine(SYS_futex, {kArena + 0x400, kFutexWaitPrivate, 2}, kArena + 0x1000));
  EXPECT_EQ(w.type, ObjectType::kUnownedLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "Rust std::sync::Mutex " + hexString(kArena + 0x400));
  EXPECT_EQ(w.detail.str(),
            "Rust std::sync::Mutex: it records no owner, so who holds it is not known");
}

TEST_F(FutexWaitsTest, AConditionWaitRetakingItsMutexWaitsOnTheMutexOwner) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_wait"};
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
}

TEST_F(FutexWaitsTest, AJoinWaitsOnTheJoinedThread) {
  process_.place(kArena + 0x300, static_cast<std::uint32_t>(kOwner));
  const auto w = waitOf(futex(kArena + 0x300, kFutexWaitBitsetShared, kOwner));
  EXPECT_EQ(w.type, ObjectType::kThreadWait);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "thread 4250");
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.detail.str(), "pthread_join");
}

TEST_F(FutexWaitsTest, AConditionVariableHasNoOwnerAndATimedWaitSaysWhatIsLeft) {
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  process_.place(kArena + 0x400, cond);
  const std::uint64_t word = kArena + 0x400 + 8;
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_timedwait"};
  auto w = waitOf(futex(word, kFutexWaitBitsetPrivateRealtime, 0));
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.detail.str(), "waits to be signalled; a condition has no owner");
  EXPECT_FALSE(w.timeout.has_value());

  // FUTEX_WAIT_BITSET: an absolute time, on the clock its flags name.
  process_.place(kArena + 0x800, timespec{1003, 250'000'000});
  process_.clocks[CLOCK_REALTIME] = std::chrono::seconds(1000);
  process_.clocks[CLOCK_MONOTONIC] = std::chrono::seconds(1002);
  w = waitOf(futex(word, kFutexWaitBitsetPrivateRealtime, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(3250));
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(1250));
  // One already past has nothing left.
  process_.clocks[CLOCK_MONOTONIC] = std::chrono::seconds(2000);
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(0));
  // FUTEX_WAIT: relative.
  w = waitOf(futex(word, kFutexWaitPrivate, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(1'003'250));
}

TEST_F(FutexWaitsTest, ATimespecNoKernelWouldTakeIsNoTimeout) {
  process_.place(kArena + 0x800, timespec{1, 2'000'000'000});
  process_.place(kArena + 0x810, timespec{-1, 0});
  const std::uint64_t word = kArena + 0x400;
  EXPECT_FALSE(waitOf(futex(word, kFutexWaitPrivate, 0, kArena + 0x800)).timeout.has_value());
  EXPECT_FALSE(waitOf(futex(word, kFutexWaitPrivate, 0, kArena + 0x810)).timeout.has_value());
  EXPECT_FALSE(waitOf(futex(word, kFutexWaitPrivate, 0, 0x1000)).timeout.has_value());
}

TEST_F(FutexWaitsTest, AThreadParkedAfterAPiEdeadlkWaitsOnTheMutexItWanted) {
  // Nothing to say which lock: a futex on the thread's own stack.
  auto w = waitOf(syscallLine(SYS_futex, {kArena + 0x40, kFutexWaitPrivate, 0, 0}, kArena + 0x10));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.detail.str(), "futex on the thread's own stack, waiting for 0 without a timeout");

  // pthread_mutex_lock keeps a pointer into the mutex (its __kind) in a register.
  pthread_mutex_t m{};
  m.__data.__lock = static_cast<int>(kOwner | 0x80000000U);
  m.__data.__owner = kOwner;
  m.__data.__kind = 32;  // PTHREAD_MUTEX_PRIO_INHERIT_NP (glibc pthreadP.h)
  process_.place(kArena + 0x2000, m);
  process_.registers[kWaiter] = {0, kArena + 0x2000 + 16};
  w = waitOf(syscallLine(SYS_futex, {kArena + 0x40, kFutexWaitPrivate, 0, 0}, kArena + 0x10));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, hexString(kArena + 0x2000));
  EXPECT_EQ(w.key, kArena + 0x2000);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_NE(w.detail.str().find("EDEADLK"), std::string::npos) << w.detail.str();

  // One held by the parked thread itself is not the one it wanted.
  m.__data.__lock = kWaiter;
  m.__data.__owner = kWaiter;
  process_.place(kArena + 0x2000, m);
  w = waitOf(syscallLine(SYS_futex, {kArena + 0x40, kFutexWaitPrivate, 0, 0}, kArena + 0x10));
  EXPECT_EQ(w.type, ObjectType::kFutex);
}

TEST_F(FutexWaitsTest, UnreadableMemoryIsSaidForEveryFutexWaiter) {
  process_.memory = MemoryAccess::kDenied;
  auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.status, ObjectStatus::kNoAccess);
  EXPECT_EQ(w.detail.str(), "process memory is not readable");
  process_.memory = MemoryAccess::kGone;
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.status, ObjectStatus::kError);
  EXPECT_EQ(w.detail.str(), "process exited during the read");
}

TEST_F(FutexWaitsTest, TheFutexWaitsOfAllThreadsAreReadTogetherOnce) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  std::vector<TaskReading> threads{sleeping(4243, futex(kArena + 0x400, kFutexWaitPrivate, 0)),
                                   sleeping(4244, futex(kArena + 0x100, kFutexWaitPrivate, 2)),
                                   sleeping(4245, futex(kArena + 0x100, kFutexWaitPrivate, 2)),
                                   sleeping(4246, syscallLine(SYS_pause, {}))};
  threads.push_back(sleeping(4247, ""));
  threads.back().sample.status = ObjectStatus::kRunning;
  threads.back().syscall.reset();
  classifyWaits(kPid, threads, process_);
  EXPECT_EQ(process_.window_reads, 1);
  EXPECT_EQ(process_.windows_asked, (std::vector<std::uint64_t>{kArena + 0x100, kArena + 0x400}));
  EXPECT_EQ(threads[0].sample.wait->type, ObjectType::kFutex);
  EXPECT_EQ(threads[1].sample.wait->owner_threads, threads[2].sample.wait->owner_threads);
  EXPECT_EQ(threads[3].sample.wait->type, ObjectType::kSignalWait);
  EXPECT_FALSE(threads[4].sample.wait.has_value());  // running: nothing to classify

  std::vector<TaskReading> none{sleeping(4243, syscallLine(SYS_pause, {}))};
  classifyWaits(kPid, none, process_);
  EXPECT_EQ(process_.window_reads, 1);  // no futex waiter, no read
}

}  // namespace
}  // namespace wctmon::linux_platform
