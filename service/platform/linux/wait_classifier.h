#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/ids.h"
#include "model/snapshot.h"
#include "platform/linux/call_sites.h"
#include "platform/linux/fd_resolver.h"
#include "platform/linux/glibc_sync.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/process_memory.h"
#include "platform/linux/python_state.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {

/// What classifying the waits of one process looks up beyond the threads' own task files: the
/// process's memory and descriptors, its threads and relatives, and the system's tables. The
/// Linux answers come from /proc and process memory (ProcWaitLookup); tests answer from canned
/// text and bytes.
class WaitLookup {
 public:
  virtual ~WaitLookup() = default;

  /// Reads `out.size()` bytes of the process's memory at `addr`.
  [[nodiscard]] virtual MemoryAccess readMemory(std::uint64_t addr, std::span<std::byte> out) = 0;
  /// Reads the window around each futex word of `uaddrs` (sorted, unique) into `out`, in order.
  [[nodiscard]] virtual MemoryAccess readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                                      std::vector<FutexWindow>& out) = 0;
  /// Reads up to `out.size()` bytes of the thread stack at `sp`: as many as are mapped.
  [[nodiscard]] virtual std::size_t readStack(std::uint64_t sp, std::span<std::byte> out) = 0;
  /// Reads the first `bytes` of each stack at `sps` at once, so that readStack of one of them
  /// (up to that size) costs no system call of its own; a hint, which may do nothing.
  virtual void prefetchStacks(std::span<const std::uint64_t> sps, std::size_t bytes) {
    (void)sps;
    (void)bytes;
  }
  /// The call site (a function through which a runtime waits) of the code at `address`, a
  /// return address or the pc of a system call; nullptr when it is none, or no code.
  [[nodiscard]] virtual const CallSite* callSiteAt(std::uint64_t address) = 0;
  /// Whether the process's code has a call site that refines a generic one (a runtime's wait
  /// built on pthread_cond_wait or sem_wait): if not, a generic site is the answer.
  [[nodiscard]] virtual bool mayRefine() = 0;
  /// The general registers of thread `tid`, read in a ptrace stop of a moment: only for a thread
  /// parked for good in a wait that the stop restarts unchanged (a futex wait without timeout),
  /// whose registers hold what its stack does not; `parked_on` is the word it waits on. Returns
  /// once the thread sleeps again. Empty when the thread cannot be stopped (a tracer holds it,
  /// no permission).
  [[nodiscard]] virtual std::vector<std::uint64_t> parkedThreadRegisters(
      std::int32_t tid, std::uint64_t parked_on) = 0;
  /// The threads and frames of the process's CPython interpreter, read from its memory once per
  /// lookup and only when asked (a thread waits in CPython's lock); nullptr when the process
  /// runs no CPython. A state that could not be read says why.
  [[nodiscard]] virtual const PythonState* pythonState() = 0;
  /// The NUL-terminated string at `addr` of the process's memory.
  [[nodiscard]] virtual std::optional<std::string> readString(std::uint64_t addr) = 0;

  /// What descriptor `fd` of the process refers to; nullopt when it is closed or unreadable.
  [[nodiscard]] virtual std::optional<FdTarget> fdTarget(int fd) = 0;
  /// The file offset of descriptor `fd` (the "pos" of its fdinfo).
  [[nodiscard]] virtual std::optional<std::uint64_t> fdPosition(int fd) = 0;
  /// The size of the file descriptor `fd` refers to.
  [[nodiscard]] virtual std::optional<std::uint64_t> fileSize(int fd) = 0;
  /// The inode of the FIFO `path` names as the process resolves it (relative to directory
  /// descriptor `dirfd`, or to its working directory for AT_FDCWD); nullopt when it is no FIFO.
  [[nodiscard]] virtual std::optional<std::uint64_t> fifoInode(int dirfd,
                                                               const std::string& path) = 0;

  /// Whether `tid` is a thread of the process.
  [[nodiscard]] virtual bool hasThread(std::int32_t tid) = 0;
  /// The process's children, sorted.
  [[nodiscard]] virtual std::vector<Pid> children() = 0;
  /// The stat of process `pid` (this one or another): its parent and process group.
  [[nodiscard]] virtual std::optional<StatFields> processStat(Pid pid) = 0;

  /// Whether thread `tid` of the process is held in a tracing stop by this very process: its
  /// own capture, reading the registers a moment before letting it go on in the same call.
  [[nodiscard]] virtual bool heldByUs(std::int32_t tid) = 0;
  /// The process that holds thread `tid` of the process in a tracing stop (a debugger, strace);
  /// nullopt when none does.
  [[nodiscard]] virtual std::optional<Pid> tracerOf(std::int32_t tid) = 0;
  /// The process that last operated on semaphore `num` of SysV semaphore set `semid` (semctl
  /// GETPID), as the process's IPC namespace sees it; nullopt when that cannot be asked.
  [[nodiscard]] virtual std::optional<std::int32_t> semaphoreLastPid(int semid, int num) = 0;
  /// The process thread `tid` belongs to (the Tgid of its status); nullopt when no such thread.
  [[nodiscard]] virtual std::optional<Pid> processOfThread(std::int32_t tid) = 0;
  /// The thread the process calls `tid` (in its memory: a lock's owner, a joined thread), as the
  /// service numbers threads: the same number when the process shares the service's PID
  /// namespace; else the thread of the process's namespace that has that number there (its
  /// NSpid), in this process or another of that namespace. nullopt when there is none.
  [[nodiscard]] virtual std::optional<std::int32_t> hostTid(std::int32_t tid) = 0;
  /// Whether process `other` maps the memory the process has at `uaddr` (the same file, or the
  /// same shared anonymous memory, at the same offset): whether a thread of it may hold a
  /// process-shared lock there at all.
  [[nodiscard]] virtual bool sharesMemoryAt(Pid other, std::uint64_t uaddr) = 0;
  /// Every file lock and lock waiter of the system (/proc/locks).
  [[nodiscard]] virtual const std::vector<LockEntry>& locks() = 0;
  /// Which processes hold a pipe, socket or file, or a lock on a file.
  [[nodiscard]] virtual FdHolders& fdHolders() = 0;
  /// The inode of the socket connected to the Unix socket `inode`; nullopt when not connected.
  [[nodiscard]] virtual std::optional<std::uint64_t> unixPeer(std::uint64_t inode) = 0;
  /// The time on `clock` now, for absolute timeouts.
  [[nodiscard]] virtual std::chrono::nanoseconds now(clockid_t clock) = 0;
};

/// Says what each blocked thread of process `pid` in `threads` waits on (status Blocked, with
/// its syscall read) and sets its wait: which object, whose, for how long at most. Other threads
/// are left as they are. The futex waits of all threads are resolved together, from one read of
/// the process's memory.
void classifyWaits(Pid pid, std::span<TaskReading> threads, WaitLookup& lookup);

/// The wait of a thread of a kernel thread, from its wait channel.
[[nodiscard]] WaitObject kernelThreadWait(std::string_view wchan);

}  // namespace wctmon::linux_platform
