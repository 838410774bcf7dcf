#include "platform/linux/jvm_locks.h"

#include <gtest/gtest.h>

#include "platform/linux/call_sites.h"

namespace wctmon::linux_platform {
namespace {

using namespace std::chrono_literals;
using Clock = JvmDumpState::Clock;

constexpr std::string_view kDump = R"(Full thread dump OpenJDK 64-Bit Server VM (17):

"mon-1" #12 prio=5 os_prio=0 tid=0x1 nid=0x65 waiting for monitor entry  [0x0]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at Abba.one(Abba.java:6)
	- waiting to lock <0x0000000000000b00> (a java.lang.Object)
	- locked <0x0000000000000a00> (a java.lang.Object)

"mon-2" #13 prio=5 os_prio=0 tid=0x2 nid=0x66 waiting for monitor entry  [0x0]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at Abba.two(Abba.java:7)
	- waiting to lock <0x0000000000000a00> (a java.lang.Object)
	- locked <0x0000000000000b00> (a java.lang.Object)

"pool-1" #14 prio=5 os_prio=0 tid=0x3 nid=0x67 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17/Native Method)
	- parking to wait for  <0x0000000000000c00> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)
	at java.util.concurrent.ThreadPoolExecutor.getTask(java.base@17/ThreadPoolExecutor.java:1062)

"rw" #15 prio=5 os_prio=0 tid=0x4 nid=0x68 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17/Native Method)
	- parking to wait for  <0x0000000000000d00> (a java.util.concurrent.locks.ReentrantReadWriteLock$NonfairSync)
)";

ThreadSample javaWaiter(std::int32_t tid, std::string_view kind) {
  ThreadSample t;
  t.id = ThreadRef{Pid{100}, Tid{tid}};
  t.status = ObjectStatus::kBlocked;
  WaitObject w;
  w.type = kind == kJavaParkKind ? ObjectType::kCondition : ObjectType::kUnownedLock;
  w.name = std::string(kind) + " 0x7f0000001000";
  t.wait = w;
  return t;
}

ProcessSample jvm() {
  ProcessSample p;
  p.pid = Pid{100};
  p.threads = {javaWaiter(0x65, kJavaMonitorKind), javaWaiter(0x66, kJavaMonitorKind),
               javaWaiter(0x67, kJavaParkKind), javaWaiter(0x68, kJavaParkKind)};
  return p;
}

TEST(JvmLocks, MonitorsAndLocksGetTheirHoldersConditionsStayOwnerless) {
  auto process = jvm();
  applyJavaDump(process, parseJavaThreadDump(kDump), {0x65, 0x66, 0x67, 0x68});
  const auto& mon1 = *process.threads[0].wait;
  EXPECT_EQ(mon1.type, ObjectType::kMutex);
  EXPECT_EQ(mon1.status, ObjectStatus::kOwned);
  ASSERT_EQ(mon1.owner_threads.size(), 1U);
  EXPECT_EQ(mon1.owner_threads[0], (ThreadRef{Pid{100}, Tid{0x66}}));
  EXPECT_EQ(mon1.key, 0xb00U);
  EXPECT_NE(mon1.name.str().find("java.lang.Object"), std::string::npos) << mon1.name.str();
  EXPECT_NE(mon1.detail.str().find("\"mon-2\""), std::string::npos) << mon1.detail.str();
  ASSERT_TRUE(process.threads[0].runtime_stack);
  EXPECT_EQ(process.threads[0].runtime_stack->runtime, "Java");
  EXPECT_EQ(process.threads[0].runtime_stack->frames.at(0).function, "Abba.one");
  EXPECT_EQ(process.threads[0].runtime_stack->frames.at(0).line, 6U);

  const auto& pool = *process.threads[2].wait;
  EXPECT_EQ(pool.type, ObjectType::kCondition);
  EXPECT_EQ(pool.status, ObjectStatus::kBlocked);
  EXPECT_TRUE(pool.owner_threads.empty());

  // A read lock's holders are not in the dump: a lock, with no owner named.
  const auto& rw = *process.threads[3].wait;
  EXPECT_EQ(rw.type, ObjectType::kUnownedLock);
  EXPECT_TRUE(rw.owner_threads.empty());
}

TEST(JvmLocks, OnlyThreadsTheDumpSawWhereTheyAreAreChanged) {
  auto process = jvm();
  const auto before = process.threads[1].wait;
  applyJavaDump(process, parseJavaThreadDump(kDump), {0x65});
  EXPECT_EQ(process.threads[0].wait->status, ObjectStatus::kOwned);
  EXPECT_EQ(process.threads[1].wait, before);
  // The holder of what a covered thread waits on gets its frames too.
  ASSERT_TRUE(process.threads[1].runtime_stack);
  EXPECT_FALSE(process.threads[2].runtime_stack);
}

TEST(JvmLocks, ATimedParkIsNoWaiterAMonitorEntryAlwaysIs) {
  auto park = javaWaiter(1, kJavaParkKind);
  EXPECT_TRUE(isJavaWaiter(park));
  park.wait->timeout = 5s;
  EXPECT_FALSE(isJavaWaiter(park));
  auto monitor = javaWaiter(2, kJavaMonitorKind);
  monitor.wait->timeout = 1s;  // HotSpot's retry of the monitor
  EXPECT_TRUE(isJavaWaiter(monitor));
  EXPECT_FALSE(isJavaWaiter(ThreadSample{}));
}

JavaWaiter waiter(std::int32_t tid, std::uint64_t runs, std::uint64_t cpu_ns = 0,
                  bool monitor = false) {
  return JavaWaiter{tid, monitor, runs, cpu_ns};
}

TEST(JvmDumpState, AsksOnlyPastTheBoundOncePerIntervalAndNotAgainForThreadsThatDidNotMove) {
  const JvmDumpPolicy policy{.min_wait = 1000ms, .min_interval = 10s, .retry_cpu = 200us};
  JvmDumpState state;
  const auto t0 = Clock::time_point{} + 1h;
  const std::vector<JavaWaiter> waiters{waiter(1, 10), waiter(2, 20)};

  state.observe(waiters, {200ms, 300ms}, t0);
  EXPECT_FALSE(state.shouldAsk(waiters, policy, /*on_demand=*/false, t0));
  EXPECT_TRUE(state.shouldAsk(waiters, policy, /*on_demand=*/true, t0));
  // Seen waiting again later: the wait counts from when it was first seen.
  state.observe(waiters, {0ms, 0ms}, t0 + 900ms);
  EXPECT_TRUE(state.shouldAsk(waiters, policy, false, t0 + 900ms));

  state.recordDump(std::make_shared<const JavaDump>(), waiters, t0 + 900ms, 5ms);
  EXPECT_EQ(state.covered(waiters, policy), (std::vector<std::int32_t>{1, 2}));
  // Nobody moved: no new dump, however long they wait.
  EXPECT_FALSE(state.shouldAsk(waiters, policy, false, t0 + 1h));

  // Thread 2 ran and worked: it is no longer covered, but the interval holds the next dump back.
  const std::vector<JavaWaiter> moved{waiter(1, 10), waiter(2, 21, 5'000'000)};
  EXPECT_EQ(state.covered(moved, policy), (std::vector<std::int32_t>{1}));
  state.observe(moved, {5s, 5s}, t0 + 5s);
  EXPECT_FALSE(state.shouldAsk(moved, policy, false, t0 + 5s));
  EXPECT_FALSE(state.shouldAsk(moved, policy, true, t0 + 5s));
  EXPECT_TRUE(state.shouldAsk(moved, policy, false, t0 + 11s));
}

TEST(JvmDumpState, AMonitorEntryThatOnlyRetriedIsStillCovered) {
  const JvmDumpPolicy policy{.min_wait = 1000ms, .min_interval = 10s, .retry_cpu = 200us};
  JvmDumpState state;
  const auto t0 = Clock::time_point{} + 1h;
  state.recordDump(std::make_shared<const JavaDump>(), {waiter(1, 10, 1'000'000, true)}, t0, 5ms);
  // Five retries of 30 us each.
  EXPECT_EQ(state.covered({waiter(1, 15, 1'150'000, true)}, policy),
            (std::vector<std::int32_t>{1}));
  // Five runs with 2 ms of work: it took the monitor and went on.
  EXPECT_TRUE(state.covered({waiter(1, 15, 3'000'000, true)}, policy).empty());
  // A park stopped by a capture is still where it was; one that now enters a monitor is not.
  state.recordDump(std::make_shared<const JavaDump>(), {waiter(2, 10, 1'000'000)}, t0, 5ms);
  EXPECT_EQ(state.covered({waiter(2, 12, 1'000'080)}, policy), (std::vector<std::int32_t>{2}));
  EXPECT_TRUE(state.covered({waiter(2, 12, 1'000'080, true)}, policy).empty());
}

// An idle pool's worker caught by a dump between its queue lock's release and its own wake-up
// waits on a lock nobody holds; it then takes the lock and parks on the queue's condition with
// little CPU. Counted as still covered, the old dump kept saying "taking a ReentrantLock" and
// a hang opened 5 s later.
TEST(JvmDumpState, AWaiterOnALockNobodyHeldIsNoLongerCoveredOnceItRan) {
  const JvmDumpPolicy policy{.min_wait = 1000ms, .min_interval = 10s, .retry_cpu = 200us};
  JvmDumpState state;
  const auto t0 = Clock::time_point{} + 1h;
  // "rw" (0x68) parks on a ReentrantReadWriteLock no thread of the dump holds.
  state.recordDump(std::make_shared<const JavaDump>(parseJavaThreadDump(kDump)),
                   {waiter(0x68, 10, 1'000'000)}, t0, 5ms);
  EXPECT_EQ(state.covered({waiter(0x68, 10, 1'000'000)}, policy),
            (std::vector<std::int32_t>{0x68}));
  EXPECT_TRUE(state.covered({waiter(0x68, 11, 1'000'080)}, policy).empty());
}

TEST(JvmDumpState, ARefusingJvmIsNotAskedAgainAFailingOneAfterTheInterval) {
  const JvmDumpPolicy policy{.min_wait = 0ms, .min_interval = 10s, .retry_cpu = 200us};
  const auto t0 = Clock::time_point{} + 1h;
  const std::vector<JavaWaiter> waiters{waiter(1, 10)};
  JvmDumpState refused;
  refused.observe(waiters, {1s}, t0);
  refused.recordFailure("started with -XX:+DisableAttachMechanism", /*permanent=*/true, t0);
  EXPECT_FALSE(refused.shouldAsk(waiters, policy, true, t0 + 1h));
  EXPECT_EQ(refused.error(), "started with -XX:+DisableAttachMechanism");

  JvmDumpState failed;
  failed.observe(waiters, {1s}, t0);
  failed.recordFailure("did not answer", /*permanent=*/false, t0);
  EXPECT_FALSE(failed.shouldAsk(waiters, policy, true, t0 + 5s));
  EXPECT_TRUE(failed.shouldAsk(waiters, policy, true, t0 + 11s));
}

}  // namespace
}  // namespace wctmon::linux_platform
