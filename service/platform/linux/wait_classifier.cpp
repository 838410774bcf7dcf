#include "platform/linux/wait_classifier.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "model/format.h"
#include "platform/linux/syscall_names.h"

namespace wctmon::linux_platform {
namespace {

constexpr int kFSetLkw = 7;      // F_SETLKW (== F_SETLKW64 on 64-bit)
constexpr int kFOfdSetLkw = 38;  // F_OFD_SETLKW
constexpr int kPAll = 0;         // waitid idtypes
constexpr int kPPid = 1;
constexpr int kPPgid = 2;
/// How much of a futex waiter's stack is searched for the function it waits through.
constexpr std::size_t kStackScanBytes = 1024;
/// How much of it is read first.
constexpr std::size_t kFirstStackBytes = 256;
/// How far above a generic call site (pthread_cond_wait) a caller that refines it is looked for.
constexpr std::size_t kRefineBytes = 512;

WaitObject noOwner(ObjectType type, std::string name, std::string detail) {
  WaitObject w;
  w.type = type;
  w.status = ObjectStatus::kBlocked;
  w.name = std::move(name);
  w.detail = std::move(detail);
  w.key = std::hash<std::string>{}(w.name);
  return w;
}

std::optional<std::chrono::milliseconds> millisecondsArg(std::uint64_t arg) {
  const auto ms = static_cast<std::int32_t>(arg);
  if (ms < 0) return std::nullopt;  // infinite
  return std::chrono::milliseconds(ms);
}

/// Classifies the waits of the threads of one process.
class Classifier {
 public:
  Classifier(Pid pid, WaitLookup& lookup) : pid_(pid), lookup_(lookup) {}

  void classify(std::span<TaskReading> threads) {
    std::vector<TaskReading*> futex_waiters;
    for (auto& thread : threads) {
      if (thread.sample.status != ObjectStatus::kBlocked || !thread.syscall) continue;
      if (thread.sample.state != RunState::kDiskSleep &&
          thread.syscall->kind == SyscallState::Kind::kInSyscall &&
          (thread.syscall->number == SYS_futex || restartedFutexWait(*thread.syscall))) {
        thread.syscall->number = SYS_futex;
        futex_waiters.push_back(&thread);
        continue;
      }
      thread.sample.wait = classifyOne(thread);
    }
    classifyFutexWaits(futex_waiters);
    attachPythonFrames(threads);
    for (auto& thread : threads) {
      if (!thread.sample.wait) continue;
      if (thread.sample.state == RunState::kTraced && thread.syscall &&
          thread.syscall->kind == SyscallState::Kind::kInSyscall &&
          thread.sample.wait->type != ObjectType::kKernelWait) {
        const auto tid = thread.sample.id.tid.value;
        if (lookup_.heldByUs(tid)) {
          // Held a moment by this service's own capture, then let go on in the same call: it is
          // where it was. Seen as stopped, a deadlock it is in would break for that sample, and
          // the threads waiting on it would look hung.
          thread.sample.state = RunState::kSleeping;
        } else if (const auto tracer = lookup_.tracerOf(tid)) {
          // A debugger (gdb -p) or strace holds it in the middle of its call, which it goes back
          // to when let go: the wait, and a deadlock it is in, go on.
          thread.sample.state = RunState::kSleeping;
          auto& detail = thread.sample.wait->detail;
          detail = detail.str() + (detail.empty() ? "" : "; ") +
                   "held in a tracing stop by process " + std::to_string(tracer->value) +
                   " (a debugger or strace), still in this call";
        }
      }
      if (thread.sample.state == RunState::kSleeping) thread.sample.wait->alertable = true;
      // A stopped thread waits for SIGCONT (or its tracer), not for the object of the system
      // call it was in: once continued it may find the pipe drained or the lock free. Its chain
      // ends here, as a hang that SIGCONT ends, and the call it was in is said alongside.
      if ((thread.sample.state == RunState::kStopped || thread.sample.state == RunState::kTraced) &&
          thread.sample.wait->type != ObjectType::kKernelWait) {
        const auto& was = *thread.sample.wait;
        const bool job_control = thread.sample.state == RunState::kStopped;
        auto stopped = noOwner(ObjectType::kKernelWait, job_control ? "stopped" : "tracing stop",
                               std::string(job_control ? "stopped by a signal; SIGCONT resumes it"
                                                       : "stopped by a tracer") +
                                   "; it was in: " + toString(was.type) + " " + was.name);
        stopped.key = was.key;
        thread.sample.wait = std::move(stopped);
      }
    }
  }

 private:
  /// A timeout the process passes in a `struct timespec` at `addr`: relative, or absolute on
  /// `clock` (then what is left of it now).
  std::optional<std::chrono::milliseconds> timeoutAt(std::uint64_t addr, bool absolute,
                                                     clockid_t clock) {
    if (addr == 0) return std::nullopt;
    timespec ts{};
    std::array<std::byte, sizeof(timespec)> bytes{};
    if (lookup_.readMemory(addr, bytes) != MemoryAccess::kOk) return std::nullopt;
    std::memcpy(&ts, bytes.data(), sizeof(ts));
    // Whatever the target's memory holds: a value no kernel would accept is no timeout (and must
    // not overflow the arithmetic below). 2^40 s is some 35,000 years.
    constexpr std::int64_t kMaxSeconds = std::int64_t{1} << 40;
    if (ts.tv_sec < 0 || ts.tv_sec > kMaxSeconds || ts.tv_nsec < 0 || ts.tv_nsec >= 1'000'000'000) {
      return std::nullopt;
    }
    auto value = std::chrono::milliseconds(static_cast<std::int64_t>(ts.tv_sec) * 1000 +
                                           ts.tv_nsec / 1'000'000);
    if (absolute) {
      value -= std::chrono::duration_cast<std::chrono::milliseconds>(lookup_.now(clock));
      if (value.count() < 0) value = {};
    }
    return value;
  }

  bool isLive(std::int32_t tid, bool process_shared) {
    if (lookup_.hasThread(tid)) return true;
    return process_shared && lookup_.processOfThread(tid).has_value();
  }

  ThreadRef ownerRef(std::int32_t tid) {
    if (lookup_.hasThread(tid)) return ThreadRef{pid_, Tid{tid}};
    const auto owner_pid = lookup_.processOfThread(tid);
    return ThreadRef{owner_pid.value_or(Pid{tid}), Tid{tid}};
  }

  /// Why a private lock's owner cannot unlock it: gone, or a thread of another process, which
  /// is what a child that forked while another thread held the lock sees.
  std::string missingOwner(std::int32_t owner_tid) {
    const auto owner_pid = lookup_.processOfThread(owner_tid);
    const auto tid = std::to_string(owner_tid);
    if (!owner_pid || *owner_pid == pid_) return ", owner thread " + tid + " has exited";
    const auto where = std::to_string(owner_pid->value);
    const auto self = lookup_.processStat(pid_);
    if (self && Pid{self->ppid} == *owner_pid) {
      return ", inherited locked through fork(): its owner, thread " + tid +
             ", lives in the parent process " + where +
             ", not in this one, so nothing here can unlock it";
    }
    return ", owner thread " + tid + " is not in this process (it is a thread of process " + where +
           "), so nothing here can unlock it";
  }

  /// A timed futex wait that a stop or a signal interrupted goes on as restart_syscall: the
  /// number shows that, but the argument registers still hold the futex call's (the kernel only
  /// re-enters the call), and the code it is in is a call site's (every site waits on a futex).
  bool restartedFutexWait(const SyscallState& sc) {
    if (sc.number != SYS_restart_syscall) return false;
    constexpr std::uint64_t kCommand = 0x7f;  // without FUTEX_PRIVATE_FLAG, CLOCK_REALTIME
    constexpr std::uint64_t kWait = 0;
    constexpr std::uint64_t kLockPi = 6;
    constexpr std::uint64_t kWaitBitset = 9;
    constexpr std::uint64_t kWaitRequeuePi = 11;
    constexpr std::uint64_t kLockPi2 = 13;
    const auto command = sc.args[1] & kCommand;
    if (command != kWait && command != kLockPi && command != kWaitBitset &&
        command != kWaitRequeuePi && command != kLockPi2) {
      return false;
    }
    return sc.args[0] != 0 && sc.args[0] % 4 == 0 && callSiteOf(sc) != nullptr;
  }

  /// The function through which the thread waits: the one its system call is in, or else the
  /// innermost return address on its stack that is a call site. Read from memory, never by
  /// stopping the thread; nullptr when none is known (no symbols, or a runtime not modelled).
  const CallSite* callSiteOf(const SyscallState& sc) {
    const CallSite* found = lookup_.callSiteAt(sc.pc);
    if (found != nullptr && !found->generic) return found;
    // A generic site (pthread_cond_wait) is refined only by a caller close above it: further up,
    // a word may be a return address left over from an earlier call. A process whose code has
    // no caller that refines one is not searched further.
    const bool refine = lookup_.mayRefine();
    if (found != nullptr && !refine) return found;
    // Most call sites are within the first few frames: the rest of the stack is read only when
    // they do not tell.
    std::array<std::byte, kStackScanBytes> stack{};
    std::size_t n = lookup_.readStack(sc.sp, std::span(stack).first(kFirstStackBytes));
    std::size_t until = kStackScanBytes;
    for (std::size_t at = 0; at < until; at += sizeof(std::uint64_t)) {
      if (at + sizeof(std::uint64_t) > n) {
        // The first read was whole (the stack goes on): the rest now.
        if (n != kFirstStackBytes) break;
        n += lookup_.readStack(sc.sp + n, std::span(stack).subspan(n));
        if (at + sizeof(std::uint64_t) > n) break;
      }
      std::uint64_t word = 0;
      std::memcpy(&word, stack.data() + at, sizeof(word));
      const auto* site = lookup_.callSiteAt(word);
      if (site == nullptr) continue;
      if (found == nullptr) {
        if (!site->generic || !refine) return site;
        found = site;
        until = std::min(kStackScanBytes, at + kRefineBytes);
      } else if (site->refines) {
        return site;
      }
    }
    return found;
  }

  /// The priority-inheritance mutex that a thread parked for good after EDEADLK wanted: held by
  /// another live thread, and pointed to by a register of the parked thread (pthread_mutex_lock
  /// keeps it there) or by a word of its stack.
  std::optional<std::pair<std::uint64_t, FutexDecode>> refusedPiMutex(const SyscallState& sc,
                                                                      std::int32_t self_tid,
                                                                      const TidValidator& valid) {
    std::vector<std::uint64_t> candidates = lookup_.parkedThreadRegisters(self_tid, sc.args[0]);
    std::array<std::byte, kStackScanBytes> stack{};
    const auto n = lookup_.readStack(sc.sp, stack);
    for (std::size_t at = 0; at + sizeof(std::uint64_t) <= n; at += sizeof(std::uint64_t)) {
      std::uint64_t word = 0;
      std::memcpy(&word, stack.data() + at, sizeof(word));
      candidates.push_back(word);
    }
    for (const auto word : candidates) {
      // glibc may keep a pointer to a field of the mutex instead (its __owner or __kind).
      for (const std::uint64_t field : {0, 8, 16}) {
        const auto mutex = word - field;
        if (word < 4096 || mutex % 4 != 0 || (mutex >= sc.sp && mutex < sc.sp + kStackScanBytes)) {
          continue;
        }
        std::array<std::byte, kMutexHeadSize> head{};
        if (lookup_.readMemory(mutex, head) != MemoryAccess::kOk) continue;
        if (auto d = decodePriorityInheritanceMutex(head, self_tid, valid)) {
          return std::pair{mutex, std::move(*d)};
        }
      }
    }
    return std::nullopt;
  }

  void classifyFutexWaits(const std::vector<TaskReading*>& waiters) {
    if (waiters.empty()) return;
    std::vector<std::uint64_t> uaddrs;
    uaddrs.reserve(waiters.size());
    for (const auto* thread : waiters) uaddrs.push_back(thread->syscall->args[0]);
    std::sort(uaddrs.begin(), uaddrs.end());
    uaddrs.erase(std::unique(uaddrs.begin(), uaddrs.end()), uaddrs.end());
    std::vector<FutexWindow> windows;
    const auto access = lookup_.readFutexWindows(uaddrs, windows);

    const TidValidator validator = [this](std::int32_t tid, bool shared) {
      return isLive(tid, shared);
    };
    if (access == MemoryAccess::kOk) {
      // The call site of most waits is found on the stack (glibc's futex helper is none): the
      // stacks' first bytes are read together.
      std::vector<std::uint64_t> sps;
      for (const auto* thread : waiters) {
        const auto* site = lookup_.callSiteAt(thread->syscall->pc);
        if (site == nullptr || site->generic) sps.push_back(thread->syscall->sp);
      }
      if (sps.size() > 1) lookup_.prefetchStacks(sps, kFirstStackBytes);
    }
    for (auto* thread : waiters) {
      const auto& sc = *thread->syscall;
      const std::uint64_t uaddr = sc.args[0];
      if (access != MemoryAccess::kOk) {
        WaitObject w;
        w.key = uaddr;
        w.name = hexString(uaddr);
        w.type = ObjectType::kFutex;
        w.status = access == MemoryAccess::kDenied ? ObjectStatus::kNoAccess : ObjectStatus::kError;
        w.detail = access == MemoryAccess::kDenied ? "process memory is not readable"
                                                   : "process exited during the read";
        thread->sample.wait = std::move(w);
        continue;
      }
      const auto index = static_cast<std::size_t>(
          std::lower_bound(uaddrs.begin(), uaddrs.end(), uaddr) - uaddrs.begin());
      auto w = futexWait(*thread, windows[index], validator);
      w.timeout = futexTimeout(sc);
      thread->sample.wait = std::move(w);
    }
  }

  /// What one futex wait is, from its call site and, as a check, the memory around the word.
  WaitObject futexWait(const TaskReading& thread, const FutexWindow& window,
                       const TidValidator& validator) {
    const auto& sc = *thread.syscall;
    const std::uint64_t uaddr = sc.args[0];
    const auto op = static_cast<std::uint32_t>(sc.args[1]);
    const auto val = static_cast<std::uint32_t>(sc.args[2]);
    const auto self = thread.sample.id.tid.value;
    const CallSite* site = callSiteOf(sc);
    const auto is = [site](CallSiteRole role) { return site != nullptr && site->role == role; };

    GlibcObject object = GlibcObject::kUnknownCallSite;
    if (is(CallSiteRole::kMutexLock) ||
        (is(CallSiteRole::kCondition) && site->kind.starts_with("pthread_cond"))) {
      // A condition wait that was signalled takes its mutex back before it returns.
      object = GlibcObject::kMutex;
    } else if (is(CallSiteRole::kRwLockRead) || is(CallSiteRole::kRwLockWrite)) {
      object = GlibcObject::kRwLock;
    } else if (is(CallSiteRole::kJoin)) {
      object = GlibcObject::kJoin;
    }
    const bool decodes = site == nullptr || object != GlibcObject::kUnknownCallSite;
    if (decodes) {
      auto decoded = decodeFutexWait(window, op, val, self, validator, object);
      if (decoded.kind != FutexWaitKind::kUnknown) return lockWait(uaddr, decoded);
    }
    constexpr std::uint64_t kNearStack = 64 * 1024;
    const bool parked_on_stack =
        uaddr >= sc.sp && uaddr < sc.sp + kNearStack && val == 0 && sc.args[3] == 0;
    if (parked_on_stack && (site == nullptr || is(CallSiteRole::kMutexLock))) {
      // glibc parks a thread like this, for good, when the kernel refuses a priority-inheritance
      // lock with EDEADLK: the lock it wanted is still on its stack.
      if (auto refused = refusedPiMutex(sc, self, validator)) {
        auto& [mutex, decoded] = *refused;
        decoded.detail +=
            "; the kernel refused this lock with EDEADLK (a deadlock) and glibc parks the thread "
            "for good";
        auto w = lockWait(mutex, decoded);
        return w;
      }
    }
    WaitObject w;
    w.key = uaddr;
    w.name = hexString(uaddr);
    if (site == nullptr) {
      w.type = ObjectType::kFutex;
      w.status = ObjectStatus::kBlocked;
      w.detail = parked_on_stack
                     ? "futex on the thread's own stack, waiting for 0 without a timeout"
                     : "a futex wait whose call site is not known (no symbols for its code): "
                       "no owner is recorded";
      return w;
    }
    const std::string kind(site->kind);
    switch (site->role) {
      case CallSiteRole::kMutexLock:
        w.type = ObjectType::kMutex;
        w.status = ObjectStatus::kUnknown;
        w.detail = kind + ": its owner is not recorded at this moment";
        break;
      case CallSiteRole::kRwLockRead:
      case CallSiteRole::kRwLockWrite:
        w.type = ObjectType::kRwLock;
        w.status = ObjectStatus::kUnknown;
        w.detail = kind +
                   (site->role == CallSiteRole::kRwLockRead ? " wanted for reading"
                                                            : " wanted for writing") +
                   "; its holders are not recorded";
        break;
      case CallSiteRole::kJoin:
        w.type = ObjectType::kThreadWait;
        w.status = ObjectStatus::kUnknown;
        w.detail = kind;
        break;
      case CallSiteRole::kCondition: {
        // Most waiters of a process are here: one text for all of them, not one each.
        static const SharedText kSignalled("waits to be signalled; a condition has no owner");
        w.type = ObjectType::kCondition;
        w.status = ObjectStatus::kBlocked;
        w.name = kind + " " + w.name;
        w.detail = kSignalled;
        break;
      }
      case CallSiteRole::kGoRuntime:
        w.type = ObjectType::kCondition;
        w.status = ObjectStatus::kBlocked;
        w.name = kind;
        w.detail =
            "an OS thread of the Go runtime with nothing to run; goroutines are not OS threads";
        break;
      case CallSiteRole::kLockOrCondition:
        w.type = ObjectType::kFutex;
        w.status = ObjectStatus::kBlocked;
        w.name = kind + " " + w.name;
        w.detail = std::string(site->detail);
        pythonLockWait(thread, w);
        break;
      case CallSiteRole::kUnownedLock:
        w.type = ObjectType::kUnownedLock;
        w.status = ObjectStatus::kUnknown;
        w.name = kind + " " + w.name;
        w.detail = site->detail.empty()
                       ? kind + ": it records no owner, so who holds it is not known"
                       : std::string(site->detail);
        break;
    }
    return w;
  }

  /// The CPython object whose lock (a semaphore) is the word a thread waits on: an RLock, a
  /// Lock or a SimpleQueue, each of which keeps its lock right after its object header. Found as
  /// a word of the thread's stack (or, failing that, of its registers) that points to one.
  struct PythonLockObject {
    std::uint64_t address = 0;
    std::string type;
    std::uint64_t owner = 0;  // an RLock's rlock_owner (a pthread_t), 0 when free
    std::uint64_t count = 0;  // its rlock_count
  };

  std::optional<PythonLockObject> pythonLockObject(const SyscallState& sc, std::int32_t tid,
                                                   bool may_stop) {
    const std::uint64_t sem = sc.args[0];
    std::array<std::byte, kStackScanBytes> stack{};
    std::size_t n = lookup_.readStack(sc.sp, std::span(stack).first(kFirstStackBytes));
    auto found = pythonLockObjectAmong(stackWords(stack, n, sc.sp, sem), sem);
    if (!found && n == kFirstStackBytes) {
      n += lookup_.readStack(sc.sp + n, std::span(stack).subspan(n));
      found = pythonLockObjectAmong(stackWords(stack, n, sc.sp, sem), sem);
    }
    if (!found && may_stop) {
      std::vector<std::uint64_t> registers = lookup_.parkedThreadRegisters(tid, sem);
      std::erase_if(registers, [&](std::uint64_t p) { return !maybeObject(p, sc.sp, sem); });
      found = pythonLockObjectAmong(registers, sem);
    }
    return found;
  }

  static bool maybeObject(std::uint64_t p, std::uint64_t sp, std::uint64_t sem) {
    constexpr std::uint64_t kUserTop = std::uint64_t{1} << 47;
    return p >= 0x10000 && p < kUserTop && p % 8 == 0 && p != sem &&
           (p < sp || p >= sp + kStackScanBytes);
  }

  /// The words of the first `n` bytes of `stack` (at `sp`) that may point to an object.
  static std::vector<std::uint64_t> stackWords(std::span<const std::byte> stack, std::size_t n,
                                               std::uint64_t sp, std::uint64_t sem) {
    std::vector<std::uint64_t> out;
    for (std::size_t at = 0; at + sizeof(std::uint64_t) <= n; at += sizeof(std::uint64_t)) {
      std::uint64_t word = 0;
      std::memcpy(&word, stack.data() + at, sizeof(word));
      if (maybeObject(word, sp, sem)) out.push_back(word);
    }
    return out;
  }

  /// The first of `candidates` (innermost first) that is a CPython lock object on `sem`. Their
  /// headers are read together, in the windows a futex word is read in.
  std::optional<PythonLockObject> pythonLockObjectAmong(
      const std::vector<std::uint64_t>& candidates, std::uint64_t sem) {
    // PyObject_HEAD (refcount, type), then the lock; an RLock's owner and count after it.
    constexpr std::size_t kType = kFutexWindowBefore + 8;
    constexpr std::size_t kLock = kFutexWindowBefore + 16;
    constexpr std::size_t kOwner = kFutexWindowBefore + 24;
    constexpr std::size_t kCount = kFutexWindowBefore + 32;
    std::vector<std::uint64_t> sorted = candidates;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted.empty()) return std::nullopt;
    std::vector<FutexWindow> windows;
    if (lookup_.readFutexWindows(sorted, windows) != MemoryAccess::kOk) return std::nullopt;
    const auto at = [](const FutexWindow& w, std::size_t offset) {
      std::uint64_t v = 0;
      std::memcpy(&v, w.bytes.data() + offset, sizeof(v));
      return v;
    };
    for (const auto p : candidates) {
      const auto& w = windows[static_cast<std::size_t>(
          std::lower_bound(sorted.begin(), sorted.end(), p) - sorted.begin())];
      if (w.valid_begin > kType || w.valid_end < kCount + 8 || at(w, kLock) != sem) continue;
      const auto& type = pythonTypeName(at(w, kType));
      if (type != "_thread.RLock" && type != "_thread.lock" && type != "_queue.SimpleQueue") {
        continue;
      }
      return PythonLockObject{p, type, at(w, kOwner), at(w, kCount)};
    }
    return std::nullopt;
  }

  /// The tp_name of the type object at `type`, read once per classification.
  const std::string& pythonTypeName(std::uint64_t type) {
    auto it = python_types_.find(type);
    if (it != python_types_.end()) return it->second;
    constexpr std::uint64_t kTpName = 24;
    std::string name;
    std::array<std::byte, 8> pointer{};
    if (lookup_.readMemory(type + kTpName, pointer) == MemoryAccess::kOk) {
      std::uint64_t at = 0;
      std::memcpy(&at, pointer.data(), sizeof(at));
      name = lookup_.readString(at).value_or("");
    }
    return python_types_.emplace(type, std::move(name)).first->second;
  }

  /// The TID of the thread whose pthread_t is `thread`: as the interpreter records it, or else
  /// from glibc's struct pthread when that validates.
  std::optional<std::int32_t> tidOfPthread(std::uint64_t thread, const PythonState* python) {
    if (python != nullptr && python->readable()) {
      if (const auto* t = python->byThreadId(thread)) return t->native_id;
    }
    std::array<std::byte, 8> self{};
    std::array<std::byte, 4> tid_bytes{};
    std::uint64_t self_word = 0;
    std::int32_t tid = 0;
    if (thread < 4096 || lookup_.readMemory(thread, self) != MemoryAccess::kOk ||
        lookup_.readMemory(thread + kPthreadTidOffset, tid_bytes) != MemoryAccess::kOk) {
      return std::nullopt;
    }
    std::memcpy(&self_word, self.data(), sizeof(self_word));
    std::memcpy(&tid, tid_bytes.data(), sizeof(tid));
    if (self_word != thread || tid <= 0 || !lookup_.hasThread(tid)) return std::nullopt;
    return tid;
  }

  const PythonState* pythonState() {
    if (!python_asked_) {
      python_asked_ = true;
      python_ = lookup_.pythonState();
    }
    return python_;
  }

  /// Says what a thread blocked in CPython's lock waits for, where the object on its stack and
  /// its innermost Python frame tell: an RLock's owner (an edge of the wait graph), a Lock (no
  /// owner recorded), or a condition, event, queue or pool wait (nobody owns those). `w` is the
  /// wait as the call site alone names it, kept when neither tells.
  void pythonLockWait(const TaskReading& thread, WaitObject& w) {
    const auto& sc = *thread.syscall;
    const auto tid = thread.sample.id.tid.value;
    const PythonState* python = pythonState();
    const PythonThread* frames =
        python != nullptr && python->readable() ? python->byNativeId(tid) : nullptr;
    const StackFrame* innermost =
        frames != nullptr && !frames->frames.empty() ? &frames->frames.front() : nullptr;
    const auto library = innermost != nullptr ? pythonLibraryWait(*innermost) : std::nullopt;
    std::string where;
    if (innermost != nullptr) {
      where = "; innermost Python frame: " + innermost->function + " at " + innermost->file +
              (innermost->line > 0 ? ":" + std::to_string(innermost->line) : "");
    }
    // A thread parked for good that its frames do not place in the standard library may be
    // stopped a moment for its registers (the object's address may be only there).
    const bool may_stop = sc.args[3] == 0 && innermost != nullptr && !library;
    const auto object = pythonLockObject(sc, tid, may_stop);
    const auto condition = [&](const std::string& kind, const std::string& what) {
      w.type = ObjectType::kCondition;
      w.status = ObjectStatus::kBlocked;
      w.name = kind + " " + hexString(sc.args[0]);
      w.detail = what + where;
    };
    if (object && object->type == "_thread.RLock") {
      w.type = ObjectType::kMutex;
      w.name = "Python threading.RLock " + hexString(object->address);
      const auto owner = object->owner != 0 ? tidOfPthread(object->owner, python) : std::nullopt;
      if (owner && *owner != tid) {
        w.status = ObjectStatus::kOwned;
        w.owner_threads.push_back(ThreadRef{pid_, Tid{*owner}});
        w.detail = "threading.RLock held by thread " + std::to_string(*owner) + " (taken " +
                   std::to_string(object->count) + " time(s)), as the RLock records it" + where;
      } else if (object->owner == 0) {
        w.status = ObjectStatus::kUnknown;
        w.detail = "threading.RLock, free at this read (its holder was releasing it)" + where;
      } else if (python != nullptr && python->readable()) {
        w.status = ObjectStatus::kAbandoned;
        w.detail = "threading.RLock whose owner (pthread " + hexString(object->owner) +
                   ") is no thread of the interpreter: it exited holding it" + where;
      } else {
        w.status = ObjectStatus::kUnknown;
        w.detail = "threading.RLock whose owner (pthread " + hexString(object->owner) +
                   ") is not known" + where;
      }
      return;
    }
    if (object && object->type == "_queue.SimpleQueue") {
      condition("Python queue.SimpleQueue.get",
                "waits for an item of a queue.SimpleQueue; a queue has no owner");
      return;
    }
    if (library) {
      condition(*library,
                "a wait of Python's standard library for a condition, event, queue, semaphore, "
                "barrier or thread: nobody owns it");
      return;
    }
    if (object && object->type == "_thread.lock" && innermost != nullptr) {
      w.type = ObjectType::kUnownedLock;
      w.status = ObjectStatus::kUnknown;
      w.name = "Python threading.Lock " + hexString(object->address);
      w.detail = "threading.Lock records no owner, so who holds it is not known" + where;
      return;
    }
    if (python != nullptr && !python->readable()) {
      w.detail = w.detail.str() + "; " + python->error;
    } else {
      w.detail = w.detail.str() + where;
    }
  }

  /// Gives the blocked threads of a CPython process, when its interpreter was read, their Python
  /// frames.
  void attachPythonFrames(std::span<TaskReading> threads) {
    if (python_ == nullptr || !python_->readable()) return;
    for (auto& thread : threads) {
      if (!thread.sample.wait || thread.sample.runtime_stack) continue;
      const auto* t = python_->byNativeId(thread.sample.id.tid.value);
      if (t == nullptr || t->frames.empty()) continue;
      thread.sample.runtime_stack =
          RuntimeStack{"Python", t->frames,
                       std::string("the CPython interpreter's state, read from its memory") +
                           (t->truncated ? "; not all frames were readable" : "")};
    }
  }

  /// A wait on a lock (or a joined thread) whose owner the decoding named.
  WaitObject lockWait(std::uint64_t uaddr, const FutexDecode& decoded) {
    WaitObject w;
    w.key = uaddr;
    w.detail = decoded.detail;
    w.name = hexString(uaddr + static_cast<std::uint64_t>(decoded.object_offset));
    switch (decoded.kind) {
      case FutexWaitKind::kMutex:
      case FutexWaitKind::kPriorityInheritance:
        w.type = ObjectType::kMutex;
        break;
      case FutexWaitKind::kRwLockWrite:
      case FutexWaitKind::kRwLockRead:
        w.type = ObjectType::kRwLock;
        break;
      case FutexWaitKind::kJoin:
        w.type = ObjectType::kThreadWait;
        w.name = "thread " + std::to_string(decoded.owner_tid);
        break;
      case FutexWaitKind::kUnknown:
        w.type = ObjectType::kFutex;
        break;
    }
    if (decoded.kind == FutexWaitKind::kRwLockRead) {
      w.status = ObjectStatus::kUnknown;
    } else if (decoded.owner_gone) {
      w.status = ObjectStatus::kAbandoned;
      if (decoded.owner_tid > 0 && decoded.kind == FutexWaitKind::kMutex) {
        w.detail += missingOwner(decoded.owner_tid);
      }
    } else {
      w.status = ObjectStatus::kOwned;
      w.owner_threads.push_back(ownerRef(decoded.owner_tid));
    }
    return w;
  }

  /// The time a futex wait has left. As the kernel reads it (futex(2)): FUTEX_WAIT's timeout is
  /// relative; every other operation's is absolute, on the clock FUTEX_CLOCK_REALTIME picks,
  /// except FUTEX_LOCK_PI's, which is on CLOCK_REALTIME whatever the flags say.
  std::optional<std::chrono::milliseconds> futexTimeout(const SyscallState& sc) {
    constexpr std::uint32_t kCmdMask = 127;
    constexpr std::uint32_t kFutexWait = 0;
    constexpr std::uint32_t kFutexLockPi = 6;
    constexpr std::uint32_t kFutexClockRealtime = 256;
    const auto op = static_cast<std::uint32_t>(sc.args[1]);
    const std::uint32_t cmd = op & kCmdMask;
    const bool absolute = cmd != kFutexWait;
    const clockid_t clock =
        cmd == kFutexLockPi || (op & kFutexClockRealtime) != 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    return timeoutAt(sc.args[3], absolute, clock);
  }

  WaitObject classifyOne(const TaskReading& thread) {
    const auto& sc = *thread.syscall;
    const auto state = thread.sample.state;
    if (state == RunState::kDiskSleep) {
      return noOwner(ObjectType::kKernelWait,
                     thread.wchan.empty() ? "uninterruptible" : thread.wchan,
                     sc.kind == SyscallState::Kind::kInSyscall
                         ? "uninterruptible sleep (D) in syscall " + std::to_string(sc.number)
                         : "uninterruptible sleep (D) outside a syscall");
    }
    if ((state == RunState::kStopped || state == RunState::kTraced) &&
        sc.kind != SyscallState::Kind::kInSyscall) {
      return noOwner(ObjectType::kKernelWait,
                     state == RunState::kStopped ? "stopped" : "tracing stop",
                     state == RunState::kStopped ? "stopped by a signal; SIGCONT resumes it"
                                                 : "stopped by a tracer");
    }
    if (sc.kind == SyscallState::Kind::kNotInSyscall) {
      return noOwner(ObjectType::kKernelWait, thread.wchan.empty() ? "kernel" : thread.wchan,
                     "sleeping outside a syscall");
    }
    const auto& a = sc.args;
    switch (sc.number) {
      case SYS_wait4:
        return processWait(static_cast<std::int32_t>(a[0]), kPPid);
      case SYS_waitid:
        return processWait(static_cast<std::int32_t>(a[1]), static_cast<int>(a[0]));
      case SYS_flock:
        return fileLock(static_cast<int>(a[0]), flockRequest(static_cast<int>(a[1])));
      case SYS_fcntl: {
        const auto cmd = static_cast<int>(a[1]);
        if (cmd == kFSetLkw || cmd == kFOfdSetLkw) {
          const int fd = static_cast<int>(a[0]);
          return fileLock(fd, fcntlRequest(fd, cmd == kFOfdSetLkw, a[2]));
        }
        break;
      }
      case SYS_read:
      case SYS_readv:
      case SYS_pread64:
      case SYS_preadv:
      case SYS_preadv2:
      case SYS_recvfrom:
      case SYS_recvmsg:
      case SYS_recvmmsg:
        return fdWait(static_cast<int>(a[0]), true);
      case SYS_write:
      case SYS_writev:
      case SYS_pwrite64:
      case SYS_pwritev:
      case SYS_pwritev2:
      case SYS_sendto:
      case SYS_sendmsg:
      case SYS_sendmmsg:
        return fdWait(static_cast<int>(a[0]), false);
      case SYS_accept:
      case SYS_accept4:
      case SYS_connect:
        return noOwner(ObjectType::kSocketIo, fdName(static_cast<int>(a[0])),
                       sc.number == SYS_connect ? "connect" : "accept");
      case SYS_nanosleep: {
        auto w = noOwner(ObjectType::kSleep, "nanosleep", "sleeping");
        w.timeout = timeoutAt(a[0], false, CLOCK_MONOTONIC);
        return w;
      }
      case SYS_clock_nanosleep: {
        auto w = noOwner(ObjectType::kSleep, "clock_nanosleep", "sleeping");
        w.timeout = timeoutAt(a[2], (a[1] & 1) != 0, static_cast<clockid_t>(a[0]));
        return w;
      }
      case SYS_poll:
      case SYS_ppoll:
      case SYS_select:
      case SYS_pselect6:
      case SYS_epoll_wait:
      case SYS_epoll_pwait:
      case SYS_epoll_pwait2: {
        auto w = noOwner(ObjectType::kPoll, "event wait", "waiting for any of its event sources");
        if (sc.number == SYS_poll) w.timeout = millisecondsArg(a[2]);
        if (sc.number == SYS_epoll_wait || sc.number == SYS_epoll_pwait) {
          w.timeout = millisecondsArg(a[3]);
        }
        return w;
      }
      case SYS_open:
        return openWait(AT_FDCWD, a[0], static_cast<int>(a[1]));
      case SYS_openat:
        return openWait(static_cast<int>(a[0]), a[1], static_cast<int>(a[2]));
      case SYS_pause:
      case SYS_rt_sigsuspend:
      case SYS_rt_sigtimedwait:
        return noOwner(ObjectType::kSignalWait, "signal", "waiting for a signal");
      case SYS_semop:
      case SYS_semtimedop: {
        auto w = sysvSemaphoreWait(static_cast<int>(a[0]), a[1], a[2]);
        if (sc.number == SYS_semtimedop) w.timeout = timeoutAt(a[3], false, CLOCK_MONOTONIC);
        return w;
      }
      case SYS_futex_waitv:
        return noOwner(ObjectType::kFutex, "futex_waitv", "waiting on several futexes");
      default:
        break;
    }
    return noOwner(ObjectType::kUnknown, syscallName(sc.number),
                   "blocked in a system call wctmon does not model");
  }

  /// A thread blocked in semop()/semtimedop() on SysV semaphore set `semid`: which semaphores of
  /// the set it waits on (the operations at `sops` that take or wait for zero), and which process
  /// last operated on each. A SysV semaphore records no owner.
  WaitObject sysvSemaphoreWait(int semid, std::uint64_t sops, std::uint64_t nsops) {
    struct Op {
      std::uint16_t num;
      std::int16_t op;
      std::int16_t flags;
    };
    static_assert(sizeof(Op) == 6, "struct sembuf");
    constexpr std::uint64_t kMaxOps = 16;
    std::array<Op, kMaxOps> ops{};
    const auto count = std::min(nsops, kMaxOps);
    std::vector<std::uint16_t> waited;
    if (lookup_.readMemory(sops, std::as_writable_bytes(std::span(ops.data(), count))) ==
        MemoryAccess::kOk) {
      for (std::uint64_t i = 0; i < count; ++i) {
        if (ops[i].op <= 0 && std::find(waited.begin(), waited.end(), ops[i].num) == waited.end()) {
          waited.push_back(ops[i].num);
        }
      }
    }
    std::sort(waited.begin(), waited.end());
    std::string name = "SysV semaphore set " + std::to_string(semid);
    std::string last;
    if (!waited.empty()) {
      name += waited.size() == 1 ? ", semaphore " : ", semaphores ";
      for (std::size_t i = 0; i < waited.size(); ++i) {
        name += (i == 0 ? "" : i + 1 == waited.size() ? " and " : ", ") + std::to_string(waited[i]);
        if (const auto pid = lookup_.semaphoreLastPid(semid, waited[i])) {
          last += (last.empty() ? "" : ", ") + std::string("semaphore ") +
                  std::to_string(waited[i]) + " by pid " + std::to_string(*pid);
        }
      }
    }
    auto w = noOwner(ObjectType::kUnownedLock, name,
                     "a SysV semaphore records no owner" +
                         (last.empty() ? std::string() : "; last operated on: " + last));
    w.status = ObjectStatus::kUnknown;
    w.key =
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(semid)) | (std::uint64_t{3} << 40);
    return w;
  }

  /// A thread blocked in open(): a FIFO waits there for its other end to be opened; anything
  /// else (a device, a network file system) is a wait wctmon does not model.
  WaitObject openWait(int dirfd, std::uint64_t path_addr, int flags) {
    auto path = lookup_.readString(path_addr);
    if (!path) {
      return noOwner(ObjectType::kUnknown, "open", "blocked in open(); the path is not readable");
    }
    const auto inode = lookup_.fifoInode(dirfd, *path);
    if (!inode) return noOwner(ObjectType::kUnknown, *path, "blocked in open()");
    const bool reading = (flags & O_ACCMODE) == O_RDONLY;
    auto w = noOwner(ObjectType::kFifoOpen, *path,
                     reading ? "opening a FIFO for reading: waits until a writer opens it"
                             : "opening a FIFO for writing: waits until a reader opens it");
    w.key = *inode;
    return w;
  }

  std::string fdName(int fd) {
    auto target = lookup_.fdTarget(fd);
    return target ? target->link : "fd " + std::to_string(fd);
  }

  std::optional<std::int32_t> processGroup(Pid pid) {
    auto stat = lookup_.processStat(pid);
    return stat ? std::optional(stat->pgrp) : std::nullopt;
  }

  WaitObject processWait(std::int32_t id, int idtype) {
    // wait4's pid argument: > 0 one child, -1 any child, 0 or < -1 a process group.
    int kind = idtype;
    std::int32_t target = id;
    if (idtype == kPPid && id == -1) kind = kPAll;
    if (idtype == kPPid && id <= 0 && id != -1) {
      kind = kPPgid;
      // INT_MIN has no negation: the kernel refuses that wait (ESRCH), so it names no group.
      target = id == 0                                          ? processGroup(pid_).value_or(0)
               : id == std::numeric_limits<std::int32_t>::min() ? id
                                                                : -id;
    }
    WaitObject w;
    w.type = ObjectType::kProcessWait;
    for (const auto child : lookup_.children()) {
      if (kind == kPAll || (kind == kPPid && child.value == target) ||
          (kind == kPPgid && processGroup(child) == target)) {
        w.owner_processes.push_back(child);
      }
    }
    w.name = kind == kPPid    ? "process " + std::to_string(target)
             : kind == kPPgid ? "process group " + std::to_string(target)
                              : "any child process";
    w.detail = std::to_string(w.owner_processes.size()) + " child process(es) can end this wait";
    w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
    w.key =
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(target)) | (std::uint64_t{1} << 40);
    return w;
  }

  /// What `fcntl(fd, cmd, lock)` asks for, from the `struct flock` in the target's memory.
  std::optional<LockRequest> fcntlRequest(int fd, bool ofd, std::uint64_t lock_addr) {
    struct {
      std::int16_t type;
      std::int16_t whence;
      std::int64_t start;
      std::int64_t len;
      std::int32_t pid;
    } raw{};
    static_assert(sizeof(raw) == 32, "struct flock of x86-64");
    std::array<std::byte, sizeof(raw)> bytes{};
    if (lookup_.readMemory(lock_addr, bytes) != MemoryAccess::kOk) return std::nullopt;
    std::memcpy(&raw, bytes.data(), sizeof(raw));
    std::uint64_t position = 0;
    std::uint64_t size = 0;
    if (raw.whence == SEEK_CUR) position = lookup_.fdPosition(fd).value_or(0);
    if (raw.whence == SEEK_END) size = lookup_.fileSize(fd).value_or(0);
    return fcntlLockRequest(ofd, FlockArgument{raw.type, raw.whence, raw.start, raw.len}, position,
                            size);
  }

  WaitObject fileLock(int fd, const std::optional<LockRequest>& request) {
    WaitObject w;
    w.type = ObjectType::kFileLock;
    auto target = lookup_.fdTarget(fd);
    if (!target) {
      w.status = ObjectStatus::kError;
      w.name = "fd " + std::to_string(fd);
      return w;
    }
    w.key = target->inode;
    auto resolved =
        resolveFileLockWait(pid_, *target, request, lookup_.locks(), lookup_.fdHolders());
    w.name = resolved.name;
    w.detail = resolved.found ? resolved.detail : "the blocked request is not in /proc/locks";
    w.owner_processes = std::move(resolved.holders);
    w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
    return w;
  }

  WaitObject fdWait(int fd, bool reading) {
    auto target = lookup_.fdTarget(fd);
    if (!target) {
      auto w = noOwner(ObjectType::kUnknown, "fd " + std::to_string(fd), "descriptor not readable");
      w.status = ObjectStatus::kError;
      return w;
    }
    using Kind = FdTarget::Kind;
    using Access = FdHolders::Access;
    switch (target->kind) {
      case Kind::kPipe:
      case Kind::kFifo: {
        WaitObject w;
        w.type = ObjectType::kPipe;
        w.name = target->link;
        w.key = target->inode;
        // A reader waits for whoever can write, a writer for whoever can read.
        w.owner_processes =
            lookup_.fdHolders().holders(*target, reading ? Access::kWritable : Access::kReadable);
        w.detail = reading ? "read on an empty pipe; the holders of its write end can end it"
                           : "write to a full pipe; the holders of its read end can end it";
        w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
        return w;
      }
      case Kind::kSocket: {
        const auto peer = lookup_.unixPeer(target->inode);
        if (!peer) {
          return noOwner(ObjectType::kSocketIo, target->link,
                         reading ? "receive on a socket" : "send on a socket");
        }
        WaitObject w;
        w.type = ObjectType::kUnixSocket;
        w.key = target->inode;
        FdTarget peer_target;
        peer_target.kind = Kind::kSocket;
        peer_target.link = "socket:[" + std::to_string(*peer) + "]";
        w.name = target->link + " <-> " + peer_target.link;
        w.owner_processes = lookup_.fdHolders().holders(peer_target, Access::kAny);
        w.detail = reading ? "receive on a connected Unix socket; the peer's holders can end it"
                           : "send on a full Unix socket; the peer's holders can end it";
        w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
        return w;
      }
      case Kind::kEventfd:
        return noOwner(ObjectType::kEventfd, target->link, "eventfd: any holder may signal it");
      case Kind::kSignalfd:
        return noOwner(ObjectType::kSignalWait, target->link, "waiting for a signal");
      case Kind::kTimerfd:
        return noOwner(ObjectType::kSleep, target->link, "waiting for a timer");
      default:
        return noOwner(ObjectType::kUnknown, target->link, reading ? "read" : "write");
    }
  }

  Pid pid_;
  WaitLookup& lookup_;
  /// The CPython interpreter's state, asked for by the first thread waiting in its lock.
  const PythonState* python_ = nullptr;
  bool python_asked_ = false;
  std::map<std::uint64_t, std::string> python_types_;
};

}  // namespace

void classifyWaits(Pid pid, std::span<TaskReading> threads, WaitLookup& lookup) {
  Classifier(pid, lookup).classify(threads);
}

WaitObject kernelThreadWait(std::string_view wchan) {
  return noOwner(ObjectType::kKernelWait,
                 wchan.empty() || wchan == "0" ? "kernel thread" : std::string(wchan),
                 "a kernel thread: it runs only in the kernel, there is nothing to "
                 "analyse in user space");
}

}  // namespace wctmon::linux_platform
