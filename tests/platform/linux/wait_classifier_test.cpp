// What a blocked thread waits on, by the system call it is in and its state: sleeps, event
// waits and signals with their timeouts, threads stopped by a signal or a tracer (or held a
// moment by the service's own capture), the kernel's waits, and calls wctmon does not model.
// Each kind of wait the classifier hands on has the tests of its own file.
#include "platform/linux/wait_classifier.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>

#include <vector>

#include "platform/linux/fake_process.h"

namespace wctmon::linux_platform {
namespace {

using namespace testing;
using std::chrono::milliseconds;

// --- sleeps, polls, signals ----------------------------------------------------------------

TEST_F(WaitClassifierTest, SleepsSayHowLongTheyHaveLeft) {
  process_.place(kArena + 0xc00, timespec{2, 500'000'000});
  auto w = waitOf(syscallLine(SYS_nanosleep, {kArena + 0xc00, 0}));
  EXPECT_EQ(w.type, ObjectType::kSleep);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "nanosleep");
  EXPECT_EQ(w.timeout, milliseconds(2500));

  w = waitOf(syscallLine(SYS_clock_nanosleep, {CLOCK_MONOTONIC, 0, kArena + 0xc00}));
  EXPECT_EQ(w.name, "clock_nanosleep");
  EXPECT_EQ(w.timeout, milliseconds(2500));
  process_.clocks[CLOCK_REALTIME] = std::chrono::milliseconds(1000);
  w = waitOf(syscallLine(SYS_clock_nanosleep, {CLOCK_REALTIME, TIMER_ABSTIME, kArena + 0xc00}));
  EXPECT_EQ(w.timeout, milliseconds(1500));
}

TEST_F(WaitClassifierTest, EventWaitsWithTheirTimeouts) {
  auto w = waitOf(syscallLine(SYS_poll, {kArena, 2, 1500}));
  EXPECT_EQ(w.type, ObjectType::kPoll);
  EXPECT_EQ(w.name, "event wait");
  EXPECT_EQ(w.timeout, milliseconds(1500));
  EXPECT_FALSE(waitOf(syscallLine(SYS_poll, {kArena, 2, 0xffffffff})).timeout.has_value());
  EXPECT_EQ(waitOf(syscallLine(SYS_epoll_wait, {4, kArena, 8, 250})).timeout, milliseconds(250));
  EXPECT_EQ(waitOf(syscallLine(SYS_epoll_pwait, {4, kArena, 8, 0})).timeout, milliseconds(0));
  for (const long nr : {SYS_select, SYS_pselect6, SYS_ppoll, SYS_epoll_pwait2}) {
    w = waitOf(syscallLine(nr, {1, 2, 3, 4}));
    EXPECT_EQ(w.type, ObjectType::kPoll) << nr;
    EXPECT_FALSE(w.timeout.has_value()) << nr;
  }
}

TEST_F(WaitClassifierTest, SignalWaitsAndSeveralFutexesAtOnce) {
  for (const long nr : {SYS_pause, SYS_rt_sigsuspend, SYS_rt_sigtimedwait}) {
    const auto w = waitOf(syscallLine(nr, {}));
    EXPECT_EQ(w.type, ObjectType::kSignalWait) << nr;
    EXPECT_EQ(w.name, "signal");
  }
  const auto w = waitOf(syscallLine(SYS_futex_waitv, {kArena, 2}));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.name, "futex_waitv");
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
}

// --- states: stopped, uninterruptible, outside a system call, unknown calls ----------------

TEST_F(WaitClassifierTest, AStoppedThreadWaitsForSigcontAndSaysWhatItWasIn) {
  process_.fd(5, "pipe:[555]", FdTarget::Kind::kPipe, 555);
  auto w = waitOf(syscallLine(SYS_read, {5}), 'T');
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "stopped");
  EXPECT_EQ(w.detail.str(), "stopped by a signal; SIGCONT resumes it; it was in: Pipe pipe:[555]");
  EXPECT_EQ(w.key, 555U);  // the object it was in, to compare two reads by
  EXPECT_FALSE(w.alertable);

  w = waitOf(syscallLine(SYS_read, {5}), 't');
  EXPECT_EQ(w.name, "tracing stop");
  EXPECT_EQ(w.detail.str(), "stopped by a tracer; it was in: Pipe pipe:[555]");

  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2), 'T');
  EXPECT_EQ(w.name, "stopped");
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_EQ(w.key, kArena + 0x100);

  w = waitOf("-1 0x7ffd1 0x7f2\n", 'T');  // stopped outside a system call
  EXPECT_EQ(w.name, "stopped");
  EXPECT_EQ(w.detail.str(), "stopped by a signal; SIGCONT resumes it");
}

TEST_F(WaitClassifierTest, AThreadHeldAMomentByOurOwnCaptureIsStillInItsWait) {
  // A tracing stop of this process's own capture (registers read, then let go in the same call)
  // changes nothing: a deadlock it is in must not look broken, nor its waiters hung.
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  process_.held_by_us.insert(kWaiter);
  std::vector<TaskReading> threads{
      sleeping(kWaiter, futex(kArena + 0x100, kFutexWaitPrivate, 2), 't')};
  classifyWaits(kPid, threads, process_);
  ASSERT_TRUE(threads[0].sample.wait.has_value());
  const auto& w = *threads[0].sample.wait;
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(threads[0].sample.state, RunState::kSleeping);

  // Another tracer's stop (gdb) is a stop: the chain ends there.
  process_.held_by_us.clear();
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2), 't').name, "tracing stop");
}

TEST_F(WaitClassifierTest, KernelWaitsAreNamedByTheirWaitChannel) {
  auto w = waitOf(syscallLine(SYS_fsync, {3}), 'D', "io_schedule");
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.name, "io_schedule");
  EXPECT_EQ(w.detail.str(), "uninterruptible sleep (D) in syscall 74");
  EXPECT_FALSE(w.alertable);  // D: no signal interrupts it

  // Uninterruptible in a futex call too: not a lock wait.
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2), 'D');
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.name, "uninterruptible");

  w = waitOf("-1 0x7ffd1 0x7f2\n", 'D', "");
  EXPECT_EQ(w.detail.str(), "uninterruptible sleep (D) outside a syscall");
  w = waitOf("-1 0x7ffd1 0x7f2\n", 'S', "do_signal_stop");
  EXPECT_EQ(w.name, "do_signal_stop");
  EXPECT_EQ(w.detail.str(), "sleeping outside a syscall");
  EXPECT_TRUE(w.alertable);
  EXPECT_EQ(waitOf("-1 0x7ffd1 0x7f2\n").name, "kernel");
}

TEST_F(WaitClassifierTest, ASystemCallWctmonDoesNotModelIsNamed) {
  auto w = waitOf(syscallLine(SYS_mq_timedreceive, {3}));
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "mq_timedreceive");
  EXPECT_EQ(w.detail.str(), "blocked in a system call wctmon does not model");
  EXPECT_EQ(waitOf(syscallLine(4000, {})).name, "syscall 4000");
}

TEST(KernelThreadWait, IsNamedByItsWaitChannel) {
  EXPECT_EQ(kernelThreadWait("kthreadd").name, "kthreadd");
  EXPECT_EQ(kernelThreadWait("0").name, "kernel thread");
  EXPECT_EQ(kernelThreadWait("").name, "kernel thread");
  const auto w = kernelThreadWait("rcu_gp_kthread");
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
}

}  // namespace
}  // namespace wctmon::linux_platform
