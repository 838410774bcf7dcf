// What a thread blocked in CPython's lock waits for: the RLock, Lock or SimpleQueue whose
// semaphore it waits on (found from its stack, or its registers) and its innermost Python frame
// tell an RLock's owner, a lock that records none, or a wait nobody owns. Also gives the blocked
// threads of a CPython process their Python frames.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/snapshot.h"
#include "platform/linux/python_state.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// The CPython lock waits of one process, for one classification: the interpreter's state is
/// read once, and only when a thread waits in its lock.
class PythonLockWaits {
 public:
  PythonLockWaits(Pid pid, WaitLookup& lookup) : pid_(pid), lookup_(lookup) {}

  /// Says what `thread`, blocked in CPython's lock, waits for, where the object on its stack
  /// and its innermost Python frame tell: an RLock's owner (an edge of the wait graph), a Lock
  /// (no owner recorded), or a condition, event, queue or pool wait (nobody owns those). `w` is
  /// the wait as the call site alone names it, kept when neither tells.
  void refine(const TaskReading& thread, WaitObject& w);

  /// Gives the blocked threads of `threads` their Python frames, when the interpreter was read.
  void attachFrames(std::span<TaskReading> threads) const;

 private:
  /// The CPython object whose lock (a semaphore) is the word a thread waits on: an RLock, a
  /// Lock or a SimpleQueue, each of which keeps its lock right after its object header.
  struct LockObject {
    std::uint64_t address = 0;
    std::string type;
    std::uint64_t owner = 0;  // an RLock's rlock_owner (a pthread_t), 0 when free
    std::uint64_t count = 0;  // its rlock_count
  };

  std::optional<LockObject> lockObject(const SyscallState& sc, std::int32_t tid, bool may_stop);
  std::optional<LockObject> lockObjectAmong(const std::vector<std::uint64_t>& candidates,
                                            std::uint64_t sem);
  const std::string& typeName(std::uint64_t type);
  std::optional<std::int32_t> tidOfPthread(std::uint64_t thread, const PythonState* python);
  const PythonState* pythonState();

  Pid pid_;
  WaitLookup& lookup_;
  /// The CPython interpreter's state, asked for by the first thread waiting in its lock.
  const PythonState* python_ = nullptr;
  bool python_asked_ = false;
  /// The tp_name of each type object read so far.
  std::map<std::uint64_t, std::string> type_names_;
};

}  // namespace wctmon::linux_platform
