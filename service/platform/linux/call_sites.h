#pragma once

#include <optional>
#include <string_view>

namespace wctmon::linux_platform {

/// What a thread blocked in a futex call is doing, as the function that made the call says.
enum class CallSiteRole {
  /// Locking a glibc pthread_mutex (the owner is in the mutex).
  kMutexLock,
  /// Locking a glibc pthread_rwlock for reading or for writing.
  kRwLockRead,
  kRwLockWrite,
  /// Joining a thread (the joined thread's id is the futex word).
  kJoin,
  /// A condition variable, a park, a barrier, a wait for a condition: nobody owns it.
  kCondition,
  /// A lock that records no owner: a semaphore, Rust's or absl's Mutex, a glibc internal lock.
  kUnownedLock,
  /// A thread of the Go runtime parked by its scheduler: goroutines are not OS threads.
  kGoRuntime,
  /// A primitive that serves locks and condition waits alike (CPython's lock): named, but not
  /// said to be either.
  kLockOrCondition,
};

/// The kinds HotSpot's waits are named by: a thread dump of the JVM says what is behind them.
inline constexpr std::string_view kJavaParkKind = "Java LockSupport.park";
inline constexpr std::string_view kJavaMonitorKind = "Java monitor (synchronized)";
/// The kind an idle OS thread of the Go runtime is named by: its goroutines say what waits.
inline constexpr std::string_view kGoSchedulerKind = "Go runtime scheduler";

/// The primitive a function that waits on a futex belongs to.
struct CallSite {
  CallSiteRole role = CallSiteRole::kCondition;
  /// What a person calls the primitive: "pthread_cond_wait", "POSIX semaphore",
  /// "Rust std::sync::Mutex".
  std::string_view kind;
  /// A primitive runtimes build theirs on (pthread_cond_wait under HotSpot's monitors): a caller
  /// a little further up that `refines` it says better what is waited on.
  bool generic = false;
  bool refines = false;
  /// What to say of the wait instead of the kind's usual words; empty for those.
  std::string_view detail{};
};

/// The call site that `function` (a demangled symbol name) is, when it is one of the functions
/// through which a runtime waits on a futex: glibc's pthread and semaphore calls, absl's Mutex
/// and CondVar, Rust's std::sync primitives and park, the Go runtime's scheduler sleep. Helpers
/// between such a function and the system call (futex wrappers, absl's Waiter) are none: the
/// caller that says what is waited on is the one that decides.
[[nodiscard]] std::optional<CallSite> callSiteOfFunction(std::string_view function);

/// Whether `mangled` (a symbol as an ELF symbol table holds it) could be a call site: a cheap
/// test, so that only those few names are demangled.
[[nodiscard]] bool mayBeCallSite(std::string_view mangled);

}  // namespace wctmon::linux_platform
