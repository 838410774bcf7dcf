// What the futex waits of a process are: a glibc mutex, rwlock or joined thread with its owner,
// a condition, a runtime's lock, or a futex nobody is known to own. The function a thread waits
// through (its call site, found from its pc or stack) says which, and the memory around the word
// names the owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "model/ids.h"
#include "model/snapshot.h"
#include "platform/linux/call_sites.h"
#include "platform/linux/glibc_sync.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/python_lock_waits.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// Classifies the futex waits of the threads of one process.
class FutexWaits {
 public:
  /// `python` says what a wait in CPython's lock is.
  FutexWaits(Pid pid, WaitLookup& lookup, PythonLockWaits& python)
      : pid_(pid), lookup_(lookup), python_(python) {}

  /// Whether `sc` is a timed futex wait that a stop or a signal interrupted, which goes on as
  /// restart_syscall.
  [[nodiscard]] bool isRestartedFutexWait(const SyscallState& sc);

  /// Sets the wait of each of `waiters`, blocked in a futex wait; their futex words are read
  /// together, from one read of the process's memory.
  void classify(const std::vector<TaskReading*>& waiters);

 private:
  bool isLive(std::int32_t tid, bool process_shared, std::uint64_t uaddr);
  ThreadRef ownerRef(std::int32_t tid);
  std::string missingOwner(std::int32_t owner_tid, bool process_shared);
  const CallSite* callSiteOf(const SyscallState& sc);
  std::optional<std::pair<std::uint64_t, FutexDecode>> refusedPiMutex(const SyscallState& sc,
                                                                      std::int32_t self_tid);
  WaitObject futexWait(const TaskReading& thread, const FutexWindow& window,
                       const TidValidator& validator);
  WaitObject lockWait(std::uint64_t uaddr, const FutexDecode& decoded);
  std::optional<std::chrono::milliseconds> futexTimeout(const SyscallState& sc);

  Pid pid_;
  WaitLookup& lookup_;
  PythonLockWaits& python_;
};

}  // namespace wctmon::linux_platform
