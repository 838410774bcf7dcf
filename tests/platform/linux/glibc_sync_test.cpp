// Decodes real glibc objects of this process, locked by real threads, from their bytes.
#include "platform/linux/glibc_sync.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <thread>

namespace wctmon::linux_platform {
namespace {

constexpr std::uint32_t kPrivateWaitBitset = 0x189;  // FUTEX_WAIT_BITSET | PRIVATE | REALTIME
constexpr std::uint32_t kSharedWaitBitset = 0x109;

int gettid() { return static_cast<int>(::syscall(SYS_gettid)); }

FutexWindow windowAt(const void* uaddr) {
  FutexWindow w;
  std::memcpy(w.bytes.data(), static_cast<const char*>(uaddr) - kFutexWindowBefore, w.bytes.size());
  w.valid_begin = 0;
  w.valid_end = kFutexWindowSize;
  return w;
}

/// Holds a lock in another thread for the duration of a test.
class Holder {
 public:
  template <typename Lock, typename Unlock>
  Holder(Lock lock, Unlock unlock) {
    thread_ = std::thread([this, lock, unlock] {
      lock();
      tid_ = gettid();
      while (!release_) std::this_thread::yield();
      unlock();
    });
    while (tid_ == 0) std::this_thread::yield();
  }
  ~Holder() {
    release_ = true;
    thread_.join();
  }
  [[nodiscard]] int tid() const { return tid_; }

 private:
  std::atomic<int> tid_{0};
  std::atomic<bool> release_{false};
  std::thread thread_;
};

struct Padded {
  char before[64] = {};
  pthread_mutex_t mutex;
  char after[64] = {};
};

/// The window a waiter sees: it sets the lock word to 2 ("locked, with waiters") before it
/// sleeps with the value 2.
FutexWindow contendedWindow(const pthread_mutex_t& mutex) {
  auto w = windowAt(&mutex);
  const std::uint32_t two = 2;
  std::memcpy(w.bytes.data() + kFutexWindowBefore, &two, 4);
  return w;
}

TidValidator only(int tid) {
  return [tid](std::int32_t t, bool) { return t == tid; };
}

TEST(GlibcSync, NormalMutexOwnerIsTheLockingThread) {
  Padded p;
  pthread_mutex_init(&p.mutex, nullptr);
  Holder h([&] { pthread_mutex_lock(&p.mutex); }, [&] { pthread_mutex_unlock(&p.mutex); });
  const auto w = contendedWindow(p.mutex);
  const auto d = decodeFutexWait(w, 0x80, 2, gettid(), only(h.tid()), GlibcObject::kMutex);
  EXPECT_EQ(d.kind, FutexWaitKind::kMutex);
  EXPECT_EQ(d.owner_tid, h.tid());
  EXPECT_FALSE(d.owner_gone);
  EXPECT_EQ(d.detail, "pthread_mutex (normal)");
}

TEST(GlibcSync, MutexWithDeadOwnerIsAbandoned) {
  Padded p;
  pthread_mutex_init(&p.mutex, nullptr);
  Holder h([&] { pthread_mutex_lock(&p.mutex); }, [&] { pthread_mutex_unlock(&p.mutex); });
  const auto w = contendedWindow(p.mutex);
  const auto d = decodeFutexWait(
      w, 0x80, 2, gettid(), [](std::int32_t, bool) { return false; }, GlibcObject::kMutex);
  EXPECT_EQ(d.kind, FutexWaitKind::kMutex);
  EXPECT_TRUE(d.owner_gone);
}

TEST(GlibcSync, RecursiveAndRobustSharedMutexes) {
  Padded rec;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rec.mutex, &attr);
  {
    Holder h(
        [&] {
          pthread_mutex_lock(&rec.mutex);
          pthread_mutex_lock(&rec.mutex);
        },
        [&] {
          pthread_mutex_unlock(&rec.mutex);
          pthread_mutex_unlock(&rec.mutex);
        });
    const auto w = contendedWindow(rec.mutex);
    const auto d = decodeFutexWait(w, 0x80, 2, gettid(), only(h.tid()), GlibcObject::kMutex);
    EXPECT_EQ(d.kind, FutexWaitKind::kMutex);
    EXPECT_EQ(d.owner_tid, h.tid());
    EXPECT_EQ(d.detail, "pthread_mutex (recursive), recursion count 2");
  }
  Padded robust;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&robust.mutex, &attr);
  Holder h([&] { pthread_mutex_lock(&robust.mutex); },
           [&] { pthread_mutex_unlock(&robust.mutex); });
  auto w = windowAt(&robust.mutex);
  const std::uint32_t word = static_cast<std::uint32_t>(h.tid()) | 0x80000000U;
  const auto d =
      decodeFutexWait(w, kSharedWaitBitset, word, gettid(), only(h.tid()), GlibcObject::kMutex);
  EXPECT_EQ(d.kind, FutexWaitKind::kMutex);
  EXPECT_EQ(d.owner_tid, h.tid());
  EXPECT_TRUE(d.process_shared);
}

TEST(GlibcSync, PrivateFlagMustMatchTheMutexKind) {
  Padded p;
  pthread_mutex_init(&p.mutex, nullptr);
  Holder h([&] { pthread_mutex_lock(&p.mutex); }, [&] { pthread_mutex_unlock(&p.mutex); });
  const auto w = contendedWindow(p.mutex);
  // A shared wait on a private mutex is not what glibc does: no owner is named.
  const auto d = decodeFutexWait(w, 0, 2, gettid(), only(h.tid()), GlibcObject::kMutex);
  EXPECT_EQ(d.kind, FutexWaitKind::kUnknown);
}

struct PaddedRw {
  char before[64] = {};
  pthread_rwlock_t rw;
  char after[64] = {};
};

TEST(GlibcSync, RwlockHeldForWritingNamesTheWriterFromEitherFutexWord) {
  PaddedRw p;
  pthread_rwlock_init(&p.rw, nullptr);
  Holder h([&] { pthread_rwlock_wrlock(&p.rw); }, [&] { pthread_rwlock_unlock(&p.rw); });
  const auto* base = reinterpret_cast<const char*>(&p.rw);
  for (int offset : {8, 12}) {
    const auto d = decodeFutexWait(windowAt(base + offset), kPrivateWaitBitset, 3, gettid(),
                                   only(h.tid()), GlibcObject::kRwLock);
    EXPECT_EQ(d.kind, FutexWaitKind::kRwLockWrite) << offset;
    EXPECT_EQ(d.owner_tid, h.tid());
    EXPECT_EQ(d.object_offset, -offset);
  }
}

TEST(GlibcSync, RwlockHeldForReadingHasNoKnownOwner) {
  PaddedRw p;
  pthread_rwlock_init(&p.rw, nullptr);
  Holder h([&] { pthread_rwlock_rdlock(&p.rw); }, [&] { pthread_rwlock_unlock(&p.rw); });
  // A writer announces itself (WRLOCKED) and waits on __wrphase_futex for the readers to leave.
  auto w = windowAt(reinterpret_cast<const char*>(&p.rw) + 8);
  std::uint32_t readers;
  std::memcpy(&readers, w.bytes.data() + kFutexWindowBefore - 8, 4);
  readers |= 2;
  std::memcpy(w.bytes.data() + kFutexWindowBefore - 8, &readers, 4);
  const auto d =
      decodeFutexWait(w, kPrivateWaitBitset, 2, gettid(), only(h.tid()), GlibcObject::kRwLock);
  EXPECT_EQ(d.kind, FutexWaitKind::kRwLockRead);
  EXPECT_EQ(d.readers, 1U);
  EXPECT_EQ(d.owner_tid, 0);
}

TEST(GlibcSync, JoinWaitsOnTheJoinedThreadsTidWord) {
  FutexWindow w;
  w.valid_begin = kFutexWindowBefore;
  w.valid_end = kFutexWindowSize;
  const std::uint32_t tid = 4242;
  std::memcpy(w.bytes.data() + kFutexWindowBefore, &tid, 4);
  auto d = decodeFutexWait(w, 0x109, tid, 1000, only(4242), GlibcObject::kJoin);
  EXPECT_EQ(d.kind, FutexWaitKind::kJoin);
  EXPECT_EQ(d.owner_tid, 4242);
  // A value that names no live thread is not a join.
  d = decodeFutexWait(w, 0x109, tid, 1000, only(1), GlibcObject::kJoin);
  EXPECT_EQ(d.kind, FutexWaitKind::kUnknown);
}

TEST(GlibcSync, ConditionVariablesAndGarbageHaveNoOwner) {
  struct {
    char before[64] = {};
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    char after[64] = {};
  } padded;
  const auto* signals = reinterpret_cast<const char*>(&padded.cv) + 40;
  auto d = decodeFutexWait(
      windowAt(signals), kPrivateWaitBitset, 0, gettid(), [](std::int32_t, bool) { return true; },
      GlibcObject::kUnknownCallSite);
  EXPECT_EQ(d.kind, FutexWaitKind::kUnknown);

  FutexWindow garbage;
  for (std::size_t i = 0; i < garbage.bytes.size(); ++i) garbage.bytes[i] = std::byte(i * 37 + 11);
  garbage.valid_begin = 0;
  garbage.valid_end = kFutexWindowSize;
  d = decodeFutexWait(
      garbage, kPrivateWaitBitset, 2, gettid(), [](std::int32_t, bool) { return true; },
      GlibcObject::kUnknownCallSite);
  EXPECT_NE(d.kind, FutexWaitKind::kMutex);
  EXPECT_EQ(d.owner_tid, 0);
}

TEST(GlibcSync, UnreadableWindowIsUnknown) {
  FutexWindow empty;
  const auto d = decodeFutexWait(
      empty, kPrivateWaitBitset, 2, 1, [](std::int32_t, bool) { return true; },
      GlibcObject::kMutex);
  EXPECT_EQ(d.kind, FutexWaitKind::kUnknown);
}

TEST(GlibcSync, PriorityInheritanceOwnerComesFromTheWord) {
  FutexWindow w;
  w.valid_begin = 0;
  w.valid_end = kFutexWindowSize;
  const std::uint32_t word = 777U | 0x80000000U;
  std::memcpy(w.bytes.data() + kFutexWindowBefore, &word, 4);
  auto d = decodeFutexWait(w, 6 | 128, 0, 1, only(777), GlibcObject::kMutex);
  EXPECT_EQ(d.kind, FutexWaitKind::kPriorityInheritance);
  EXPECT_EQ(d.owner_tid, 777);
  EXPECT_FALSE(d.owner_gone);
  d = decodeFutexWait(w, 6 | 128, 0, 1, only(1), GlibcObject::kMutex);
  EXPECT_TRUE(d.owner_gone);
}

TEST(GlibcSync, ARwlockShapeIsNoRwlockWithoutItsCallSite) {
  // A mutex and a condition variable followed by zeroes (HotSpot's Parker, many pools): after an
  // odd number of wakeups the words around the condition's futex look like a read-held rwlock.
  struct {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    char zeroes[64] = {};
  } parker;
  const auto* word = reinterpret_cast<const char*>(&parker.cv) + 40;
  auto w = windowAt(word);
  const std::uint32_t odd_readers = (392821772U << 3) | 0;
  std::memcpy(w.bytes.data() + kFutexWindowBefore - 8, &odd_readers, 4);
  const auto any = [](std::int32_t, bool) { return true; };
  EXPECT_EQ(decodeFutexWait(w, kPrivateWaitBitset, 0, gettid(), any, GlibcObject::kRwLock).kind,
            FutexWaitKind::kRwLockRead);
  EXPECT_EQ(
      decodeFutexWait(w, kPrivateWaitBitset, 0, gettid(), any, GlibcObject::kUnknownCallSite).kind,
      FutexWaitKind::kUnknown);
}

TEST(GlibcSync, PriorityInheritanceMutexHeldByAnotherThread) {
  Padded p;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
  pthread_mutex_init(&p.mutex, &attr);
  Holder h([&] { pthread_mutex_lock(&p.mutex); }, [&] { pthread_mutex_unlock(&p.mutex); });
  std::array<std::byte, kMutexHeadSize> head{};
  std::memcpy(head.data(), &p.mutex, head.size());
  const auto d = decodePriorityInheritanceMutex(head, gettid(), only(h.tid()));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->owner_tid, h.tid());
  EXPECT_EQ(d->kind, FutexWaitKind::kPriorityInheritance);
  // Held by the asking thread itself, or by no live thread: not the lock it waits for.
  EXPECT_FALSE(decodePriorityInheritanceMutex(head, h.tid(), only(h.tid())).has_value());
  EXPECT_FALSE(decodePriorityInheritanceMutex(head, gettid(), only(1)).has_value());
  // A normal mutex is none.
  Padded normal;
  pthread_mutex_init(&normal.mutex, nullptr);
  Holder n([&] { pthread_mutex_lock(&normal.mutex); },
           [&] { pthread_mutex_unlock(&normal.mutex); });
  std::memcpy(head.data(), &normal.mutex, head.size());
  EXPECT_FALSE(decodePriorityInheritanceMutex(head, gettid(), only(n.tid())).has_value());
}

}  // namespace
}  // namespace wctmon::linux_platform
