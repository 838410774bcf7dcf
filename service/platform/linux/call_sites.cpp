#include "platform/linux/call_sites.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

namespace wctmon::linux_platform {
namespace {

using Role = CallSiteRole;

struct Exact {
  std::string_view name;
  CallSite site;
};

constexpr std::string_view kPythonLock =
    "a CPython lock: threading.Lock and RLock, and every Condition, Event and queue wait, take "
    "one; which this is, neither the object on the thread's stack nor its Python frames told";

// glibc's entry points (exported, so every binary that uses them names them) and, where a
// symbol table keeps them, the internal functions between them and the system call.
constexpr std::array kGlibc = {
    Exact{"pthread_mutex_lock", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"__pthread_mutex_lock", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"___pthread_mutex_lock", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"__pthread_mutex_lock_full", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"pthread_mutex_timedlock", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"pthread_mutex_clocklock", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"__pthread_mutex_clocklock_common", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"__pthread_mutex_cond_lock", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"__lll_lock_wait", {Role::kMutexLock, "pthread_mutex"}},
    Exact{"pthread_cond_wait", {Role::kCondition, "pthread_cond_wait", true}},
    Exact{"__pthread_cond_wait", {Role::kCondition, "pthread_cond_wait", true}},
    Exact{"___pthread_cond_wait", {Role::kCondition, "pthread_cond_wait", true}},
    Exact{"__pthread_cond_wait_common", {Role::kCondition, "pthread_cond_wait", true}},
    Exact{"pthread_cond_timedwait", {Role::kCondition, "pthread_cond_timedwait", true}},
    Exact{"__pthread_cond_timedwait", {Role::kCondition, "pthread_cond_timedwait", true}},
    Exact{"___pthread_cond_timedwait", {Role::kCondition, "pthread_cond_timedwait", true}},
    Exact{"pthread_cond_clockwait", {Role::kCondition, "pthread_cond_clockwait", true}},
    Exact{"pthread_barrier_wait", {Role::kCondition, "pthread_barrier_wait"}},
    Exact{"pthread_rwlock_rdlock", {Role::kRwLockRead, "pthread_rwlock"}},
    Exact{"__pthread_rwlock_rdlock", {Role::kRwLockRead, "pthread_rwlock"}},
    Exact{"__pthread_rwlock_rdlock_full", {Role::kRwLockRead, "pthread_rwlock"}},
    Exact{"pthread_rwlock_timedrdlock", {Role::kRwLockRead, "pthread_rwlock"}},
    Exact{"pthread_rwlock_clockrdlock", {Role::kRwLockRead, "pthread_rwlock"}},
    Exact{"pthread_rwlock_wrlock", {Role::kRwLockWrite, "pthread_rwlock"}},
    Exact{"__pthread_rwlock_wrlock", {Role::kRwLockWrite, "pthread_rwlock"}},
    Exact{"__pthread_rwlock_wrlock_full", {Role::kRwLockWrite, "pthread_rwlock"}},
    Exact{"pthread_rwlock_timedwrlock", {Role::kRwLockWrite, "pthread_rwlock"}},
    Exact{"pthread_rwlock_clockwrlock", {Role::kRwLockWrite, "pthread_rwlock"}},
    Exact{"pthread_join", {Role::kJoin, "pthread_join"}},
    Exact{"__pthread_join", {Role::kJoin, "pthread_join"}},
    Exact{"pthread_timedjoin_np", {Role::kJoin, "pthread_join"}},
    Exact{"pthread_clockjoin_np", {Role::kJoin, "pthread_join"}},
    Exact{"__pthread_clockjoin_ex", {Role::kJoin, "pthread_join"}},
    Exact{"sem_wait", {Role::kUnownedLock, "POSIX semaphore", true}},
    Exact{"__new_sem_wait", {Role::kUnownedLock, "POSIX semaphore", true}},
    Exact{"__new_sem_wait_slow64", {Role::kUnownedLock, "POSIX semaphore", true}},
    Exact{"__new_sem_wait_slow", {Role::kUnownedLock, "POSIX semaphore", true}},
    Exact{"sem_timedwait", {Role::kUnownedLock, "POSIX semaphore", true}},
    Exact{"sem_clockwait", {Role::kUnownedLock, "POSIX semaphore", true}},
    Exact{"__lll_lock_wait_private",
          {Role::kUnownedLock, "glibc internal lock (malloc, stdio or the dynamic loader)"}},
    // CPython's one lock type serves threading.Lock and RLock and every Condition, Event and
    // queue wait: which one a thread is in, the object on its stack and its Python frames say
    // (python_lock_waits.cpp).
    Exact{"PyThread_acquire_lock_timed",
          {Role::kLockOrCondition, "Python lock", false, true, kPythonLock}},
    Exact{"PyThread_acquire_lock",
          {Role::kLockOrCondition, "Python lock", false, true, kPythonLock}},
    // gRPC's C core waits on its condition variables (absl's underneath) through gpr_cv_wait.
    Exact{"gpr_cv_wait", {Role::kCondition, "gRPC condition variable (gpr_cv_wait)", false, true}},
    // Go's runtime: an M (OS thread) with nothing to run sleeps here.
    Exact{"runtime.futexsleep", {Role::kGoRuntime, kGoSchedulerKind}},
    Exact{"runtime.notesleep", {Role::kGoRuntime, kGoSchedulerKind}},
    Exact{"runtime.notetsleep_internal", {Role::kGoRuntime, kGoSchedulerKind}},
};

/// The method part of a C++ or Rust name: after the namespace prefix, before the argument list
/// or Rust's "::h<hash>" suffix.
bool hasMember(std::string_view function, std::string_view member) {
  for (auto at = function.find(member); at != std::string_view::npos;
       at = function.find(member, at + 1)) {
    const auto end = at + member.size();
    if (end == function.size() || function[end] == '(' || function.substr(end, 3) == "::h" ||
        function[end] == '<') {
      return true;
    }
  }
  return false;
}

std::optional<CallSite> abslCaller(std::string_view f) {
  // absl's Mutex and CondVar park a thread through Block/DecrementSynchSem and the Waiter, which
  // every kind of wait shares; the caller above them says which wait it is.
  if (f.find("::CondVar::") != std::string_view::npos)
    return CallSite{Role::kCondition, "absl::CondVar"};
  if (hasMember(f, "::Notification::WaitForNotification") ||
      hasMember(f, "::Notification::WaitForNotificationWithTimeout") ||
      hasMember(f, "::Notification::WaitForNotificationWithDeadline") ||
      hasMember(f, "::BlockingCounter::Wait")) {
    return CallSite{Role::kCondition, "absl::Notification"};
  }
  for (const auto* member : {"::Mutex::AwaitCommon", "::Mutex::Await", "::Mutex::AwaitWithTimeout",
                             "::Mutex::AwaitWithDeadline"}) {
    if (hasMember(f, member)) return CallSite{Role::kCondition, "absl::Mutex::Await"};
  }
  for (const auto* member :
       {"::Mutex::LockSlowLoop", "::Mutex::LockSlowWithDeadline", "::Mutex::LockSlow",
        "::Mutex::Lock", "::Mutex::ReaderLock", "::Mutex::LockWhen", "::Mutex::ReaderLockWhen"}) {
    if (hasMember(f, member)) return CallSite{Role::kUnownedLock, "absl::Mutex"};
  }
  return std::nullopt;
}

/// An absl call site refines the park below it (abslPark).
std::optional<CallSite> abslSite(std::string_view f) {
  auto site = abslCaller(f);
  if (site) site->refines = true;
  return site;
}

/// absl's per-thread semaphore, on which every absl Mutex and CondVar wait parks.
std::optional<CallSite> abslPark(std::string_view f) {
  if (!f.starts_with("AbslInternalPerThreadSemWait")) return std::nullopt;
  return CallSite{Role::kCondition, "absl wait (Mutex or CondVar)", true};
}

struct Prefix {
  std::string_view name;
  CallSite site;
};

constexpr std::string_view kJavaMonitor =
    "entering a Java monitor (synchronized): its owner is recorded by the JVM, not in memory "
    "wctmon reads (jstack names it); the address is the waiting thread's park event";

// HotSpot (libjvm.so keeps its full symbol table): its waits go through pthread_cond_wait and
// its own semaphores, which it uses to wake workers, never as locks.
constexpr std::array kHotSpot = {
    Prefix{"Parker::park(", {Role::kCondition, kJavaParkKind, false, true}},
    Prefix{"ObjectMonitor::EnterI(",
           {Role::kUnownedLock, kJavaMonitorKind, false, true, kJavaMonitor}},
    Prefix{"ObjectMonitor::ReenterI(",
           {Role::kUnownedLock, kJavaMonitorKind, false, true, kJavaMonitor}},
    Prefix{"ObjectMonitor::wait(", {Role::kCondition, "Java Object.wait", false, true}},
    Prefix{"JavaThread::sleep(", {Role::kCondition, "Java Thread.sleep", false, true}},
    Prefix{"PosixSemaphore::wait(",
           {Role::kCondition, "HotSpot semaphore (a wake-up)", false, true}},
    Prefix{"PosixSemaphore::timedwait(",
           {Role::kCondition, "HotSpot semaphore (a wake-up)", false, true}},
    Prefix{"os::signal_wait(", {Role::kCondition, "HotSpot signal dispatcher", false, true}},
};

std::optional<CallSite> rustSite(std::string_view f) {
  // Rust's std (1.62 on): futex-based primitives, each with a cold contended path of its own.
  if (hasMember(f, "::Mutex::lock_contended")) {
    return CallSite{Role::kUnownedLock, "Rust std::sync::Mutex"};
  }
  if (hasMember(f, "::RwLock::read_contended")) {
    return CallSite{Role::kUnownedLock, "Rust std::sync::RwLock (read)"};
  }
  if (hasMember(f, "::RwLock::write_contended")) {
    return CallSite{Role::kUnownedLock, "Rust std::sync::RwLock (write)"};
  }
  if (hasMember(f, "::Condvar::wait") || hasMember(f, "::Condvar::wait_timeout") ||
      hasMember(f, "::Condvar::wait_optional_timeout")) {
    return CallSite{Role::kCondition, "Rust std::sync::Condvar"};
  }
  if (hasMember(f, "::Parker::park") || hasMember(f, "::Parker::park_timeout") ||
      hasMember(f, "std::thread::park") || hasMember(f, "std::thread::park_timeout")) {
    return CallSite{Role::kCondition, "Rust thread park"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<CallSite> callSiteOfFunction(std::string_view function) {
  // A symbol table of a shared library may carry the version: "pthread_cond_wait@GLIBC_2.2.5".
  const auto plain = function.substr(0, function.find('@'));
  for (const auto& entry : kGlibc) {
    if (entry.name == plain) return entry.site;
  }
  for (const auto& entry : kHotSpot) {
    if (function.starts_with(entry.name)) return entry.site;
  }
  if (function.starts_with("absl::")) return abslSite(function);
  if (auto park = abslPark(function)) return park;
  if (function.starts_with("std::") || function.starts_with("<std::")) return rustSite(function);
  return std::nullopt;
}

bool mayBeCallSite(std::string_view mangled) {
  static constexpr std::array kHints = {std::string_view("pthread_"),
                                        std::string_view("sem_"),
                                        std::string_view("lll_lock"),
                                        std::string_view("Mutex"),
                                        std::string_view("CondVar"),
                                        std::string_view("Condvar"),
                                        std::string_view("RwLock"),
                                        std::string_view("park"),
                                        std::string_view("Notification"),
                                        std::string_view("BlockingCounter"),
                                        std::string_view("runtime.note"),
                                        std::string_view("runtime.futexsleep"),
                                        std::string_view("ObjectMonitor"),
                                        std::string_view("Semaphore"),
                                        std::string_view("JavaThread5sleep"),
                                        std::string_view("signal_wait"),
                                        std::string_view("gpr_cv_wait"),
                                        std::string_view("PyThread_acquire_lock"),
                                        std::string_view("AbslInternalPerThreadSemWait")};
  // Every symbol of every module a process maps passes here (libstdc++ alone has 6,000 long
  // names, of which two or three are hints): one pass over the name that tests, at each
  // position, whether its four bytes may start a hint, in a bit set indexed by a hash of them.
  // Only the rare position that passes is compared with the hints in full.
  static constexpr std::size_t kPrefix = 4;
  static_assert(std::all_of(kHints.begin(), kHints.end(),
                            [](std::string_view h) { return h.size() >= kPrefix; }));
  const auto word = [](const char* at) {
    std::uint32_t w = 0;
    std::memcpy(&w, at, sizeof(w));
    return w;
  };
  const auto bucket = [](std::uint32_t w) { return (w * 0x9E3779B1U) >> 20; };
  static const auto kStarts = [&] {
    std::array<std::uint64_t, 4096 / 64> bits{};
    for (const auto hint : kHints) {
      const auto b = bucket(word(hint.data()));
      bits[b / 64] |= std::uint64_t{1} << (b % 64);
    }
    return bits;
  }();
  if (mangled.size() < kPrefix) return false;
  const char* text = mangled.data();
  const std::size_t last = mangled.size() - kPrefix;
  for (std::size_t at = 0; at <= last; ++at) {
    const auto w = word(text + at);
    const auto b = bucket(w);
    if ((kStarts[b / 64] & (std::uint64_t{1} << (b % 64))) == 0) continue;
    for (const auto hint : kHints) {
      if (word(hint.data()) == w && mangled.compare(at, hint.size(), hint) == 0) return true;
    }
  }
  return false;
}

}  // namespace wctmon::linux_platform
