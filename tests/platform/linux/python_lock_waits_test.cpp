// What a thread blocked in CPython's lock waits for, from canned memory (the lock object its
// stack points to, its type) and a canned interpreter state (threads and their Python frames).
#include "platform/linux/python_lock_waits.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <string>
#include <vector>

#include "model/format.h"
#include "platform/linux/fake_process.h"

namespace wctmon::linux_platform {
namespace {

using namespace testing;
using std::chrono::milliseconds;

// --- CPython's lock: the object on the waiter's stack and its Python frames ---------------

/// A thread blocked in CPython's lock: the semaphore it waits on, the object that holds that
/// semaphore (pointed to from its stack), and the interpreter's record of its threads.
class PythonLockTest : public WaitClassifierTest {
 protected:
  static constexpr std::uint64_t kSem = kArena + 0x3000;
  static constexpr std::uint64_t kObject = kArena + 0x3100;
  static constexpr std::uint64_t kType = kArena + 0x3200;
  static constexpr std::uint64_t kOwnerPthread = kArena + 0x4000;
  static constexpr std::uint64_t kWaiterPthread = kArena + 0x5000;
  static constexpr std::uint64_t kSp = kArena + 0x1000;

  void SetUp() override {
    process_.call_sites[kSyscallPc] = {CallSiteRole::kLockOrCondition, "Python lock", false, true,
                                       "a CPython lock"};
    const std::uint64_t stack[] = {0x1234, kSp + 0x40, kReturnAddress, kObject, 7};
    process_.place(kSp, stack);
    object("_thread.RLock", kOwnerPthread, 1);
    PythonState state;
    state.version = 0x030b02f0;
    state.threads.push_back({kOwnerPthread, kOwner, {frame("app.py", 20, "second")}, false});
    state.threads.push_back({kWaiterPthread,
                             kWaiter,
                             {frame("app.py", 9, "first"), frame("app.py", 30, "<module>")},
                             false});
    process_.python = state;
  }
  static StackFrame frame(std::string file, std::uint32_t line, std::string function) {
    StackFrame f;
    f.file = std::move(file);
    f.line = line;
    f.function = std::move(function);
    return f;
  }
  /// The object: its type (by name), the semaphore, and an RLock's owner and count.
  void object(const std::string& type, std::uint64_t owner, std::uint64_t count) {
    const std::uint64_t head[] = {1, kType, kSem, owner, count};
    process_.place(kObject, head);
    process_.place(kType + 24, kType + 0x100);
    process_.placeString(kType + 0x100, type);
  }
  TaskReading waiter() {
    std::vector<TaskReading> threads{
        sleeping(kWaiter, syscallLine(SYS_futex, {kSem, kFutexWaitBitsetPrivate, 0}, kSp))};
    classifyWaits(kPid, threads, process_);
    EXPECT_TRUE(threads[0].sample.wait.has_value());
    return threads[0];
  }
};

TEST_F(PythonLockTest, AnRLockIsOwnedByTheThreadItRecordsAndTheWaiterGetsItsPythonFrames) {
  const auto t = waiter();
  const auto& w = *t.sample.wait;
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.name, "Python threading.RLock " + hexString(kObject));
  EXPECT_EQ(w.key, kSem);
  EXPECT_EQ(w.detail.str(),
            "threading.RLock held by thread 4250 (taken 1 time(s)), as the RLock records it; "
            "innermost Python frame: first at app.py:9");
  ASSERT_TRUE(t.sample.runtime_stack.has_value());
  EXPECT_EQ(t.sample.runtime_stack->runtime, "Python");
  EXPECT_EQ(t.sample.runtime_stack->frames, process_.python->threads[1].frames);
}

TEST_F(PythonLockTest, AnRLockOwnerIsFoundInGlibcsThreadWhenTheInterpreterIsNotReadable) {
  process_.python->error = "Python frames not readable for this interpreter: version 3.12";
  process_.place(kOwnerPthread, kOwnerPthread);  // the TCB points to itself
  process_.place(kOwnerPthread + kPthreadTidOffset, kOwner);
  auto t = waiter();
  EXPECT_EQ(t.sample.wait->status, ObjectStatus::kOwned);
  EXPECT_EQ(t.sample.wait->owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_FALSE(t.sample.runtime_stack.has_value());
  // Memory that is no struct pthread names no owner.
  process_.place(kOwnerPthread, std::uint64_t{0});
  t = waiter();
  EXPECT_EQ(t.sample.wait->type, ObjectType::kMutex);
  EXPECT_EQ(t.sample.wait->status, ObjectStatus::kUnknown);
  EXPECT_TRUE(t.sample.wait->owner_threads.empty());
}

TEST_F(PythonLockTest, AnRLockWhoseOwnerTheInterpreterDoesNotKnowIsAbandoned) {
  object("_thread.RLock", kArena + 0x6000, 2);
  const auto w = *waiter().sample.wait;
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_TRUE(w.owner_threads.empty());
}

TEST_F(PythonLockTest, APlainLockTakenByUserCodeIsALockThatRecordsNoOwner) {
  object("_thread.lock", 0, 0);
  const auto w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kUnownedLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "Python threading.Lock " + hexString(kObject));
  EXPECT_TRUE(w.owner_threads.empty());
}

TEST_F(PythonLockTest, WaitsOfTheStandardLibraryAndQueuesAreConditions) {
  object("_thread.lock", 0, 0);
  process_.python->threads[1].frames[0] =
      frame("/usr/lib/python3.11/threading.py", 320, "Condition.wait");
  auto w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "Python threading.Condition.wait " + hexString(kSem));
  // A SimpleQueue's get waits on its own lock, called straight from any code.
  object("_queue.SimpleQueue", 1, 0);
  process_.python->threads[1].frames[0] = frame("app.py", 9, "first");
  w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.name, "Python queue.SimpleQueue.get " + hexString(kSem));
  // But an RLock taken back after Condition.wait is the RLock, owned.
  object("_thread.RLock", kOwnerPthread, 1);
  process_.python->threads[1].frames[0] =
      frame("/usr/lib/python3.11/threading.py", 324, "Condition.wait");
  w = *waiter().sample.wait;
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
}

TEST_F(PythonLockTest, WithoutFramesOrObjectTheWaitIsNamedByItsCallSiteAndSaysWhy) {
  object("_thread.lock", 0, 0);
  process_.python->error = "Python frames not readable for this interpreter: version 3.12";
  auto w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.name, "Python lock " + hexString(kSem));
  EXPECT_EQ(w.detail.str(),
            "a CPython lock; Python frames not readable for this interpreter: version 3.12");
  // A type that is none of CPython's locks is not taken for one.
  object("_io.BufferedReader", 0, 0);
  process_.python->error.clear();
  w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.detail.str(), "a CPython lock; innermost Python frame: first at app.py:9");
}

TEST_F(PythonLockTest, TheInterpreterIsReadOnlyForAThreadInItsLock) {
  process_.call_sites.clear();
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_wait"};
  const auto t = waiter();
  EXPECT_EQ(t.sample.wait->type, ObjectType::kCondition);
  EXPECT_EQ(process_.python_reads, 0);
  EXPECT_FALSE(t.sample.runtime_stack.has_value());
}

}  // namespace
}  // namespace wctmon::linux_platform
