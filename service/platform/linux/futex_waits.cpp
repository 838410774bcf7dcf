// The futex waits of a process: the function each thread waits through (its call site), read
// from its pc or its stack without stopping it, says what kind of object the futex word belongs
// to; the memory around the word, read for all waiters at once, names the owner. A thread glibc
// parked for good after the kernel refused a priority-inheritance lock waits on the lock it
// wanted.
#include "platform/linux/futex_waits.h"

#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "model/format.h"
#include "platform/linux/wait_classifier_internal.h"

namespace wctmon::linux_platform {
namespace {

/// How far above a generic call site (pthread_cond_wait) a caller that refines it is looked for.
constexpr std::size_t kRefineBytes = 512;

}  // namespace

bool FutexWaits::isLive(std::int32_t tid, bool process_shared, std::uint64_t uaddr) {
  const auto host = lookup_.hostTid(tid);
  if (!host) return false;
  if (lookup_.hasThread(*host)) return true;
  if (!process_shared) return false;
  // Any process may write any number into its own lock: a thread of another process holds it
  // only if that process maps the lock's memory. Otherwise the word is no evidence, and an
  // innocent process is neither blamed nor stopped for its registers.
  const auto owner = lookup_.processOfThread(*host);
  return owner && lookup_.sharesMemoryAt(*owner, uaddr);
}

ThreadRef FutexWaits::ownerRef(std::int32_t tid) {
  const auto host = lookup_.hostTid(tid).value_or(tid);
  if (lookup_.hasThread(host)) return ThreadRef{pid_, Tid{host}};
  const auto owner_pid = lookup_.processOfThread(host);
  return ThreadRef{owner_pid.value_or(Pid{host}), Tid{host}};
}

/// Why a private lock's owner cannot unlock it: gone, or a thread of another process, which
/// is what a child that forked while another thread held the lock sees.
std::string FutexWaits::missingOwner(std::int32_t owner_tid, bool process_shared) {
  const auto host = lookup_.hostTid(owner_tid);
  const auto owner_pid = host ? lookup_.processOfThread(*host) : std::nullopt;
  const auto tid = std::to_string(host.value_or(owner_tid));
  if (!owner_pid || *owner_pid == pid_) return ", owner thread " + tid + " has exited";
  const auto where = std::to_string(owner_pid->value);
  if (process_shared) {
    return ", its word names thread " + tid + " of process " + where +
           ", which does not map this lock's memory: no evidence of an owner";
  }
  const auto self = lookup_.processStat(pid_);
  if (self && Pid{self->ppid} == *owner_pid) {
    return ", inherited locked through fork(): its owner, thread " + tid +
           ", lives in the parent process " + where +
           ", not in this one, so nothing here can unlock it";
  }
  return ", owner thread " + tid + " is not in this process (it is a thread of process " + where +
         "), so nothing here can unlock it";
}

/// The number shows restart_syscall, but the argument registers still hold the futex call's
/// (the kernel only re-enters the call), and the code it is in is a call site's (every site
/// waits on a futex).
bool FutexWaits::isRestartedFutexWait(const SyscallState& sc) {
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
const CallSite* FutexWaits::callSiteOf(const SyscallState& sc) {
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
std::optional<std::pair<std::uint64_t, FutexDecode>> FutexWaits::refusedPiMutex(
    const SyscallState& sc, std::int32_t self_tid) {
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
      // The owner is checked against the mutex's memory, not the word the thread is parked on.
      const TidValidator valid = [this, mutex](std::int32_t tid, bool shared) {
        return isLive(tid, shared, mutex);
      };
      if (auto d = decodePriorityInheritanceMutex(head, self_tid, valid)) {
        return std::pair{mutex, std::move(*d)};
      }
    }
  }
  return std::nullopt;
}

void FutexWaits::classify(const std::vector<TaskReading*>& waiters) {
  if (waiters.empty()) return;
  std::vector<std::uint64_t> uaddrs;
  uaddrs.reserve(waiters.size());
  for (const auto* thread : waiters) uaddrs.push_back(thread->syscall->args[0]);
  std::sort(uaddrs.begin(), uaddrs.end());
  uaddrs.erase(std::unique(uaddrs.begin(), uaddrs.end()), uaddrs.end());
  std::vector<FutexWindow> windows;
  const auto access = lookup_.readFutexWindows(uaddrs, windows);

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
    const TidValidator validator = [this, uaddr](std::int32_t tid, bool shared) {
      return isLive(tid, shared, uaddr);
    };
    auto w = futexWait(*thread, windows[index], validator);
    w.timeout = futexTimeout(sc);
    thread->sample.wait = std::move(w);
  }
}

/// What one futex wait is, from its call site and, as a check, the memory around the word.
WaitObject FutexWaits::futexWait(const TaskReading& thread, const FutexWindow& window,
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
    if (auto refused = refusedPiMutex(sc, self)) {
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
      python_.refine(thread, w);
      break;
    case CallSiteRole::kUnownedLock:
      w.type = ObjectType::kUnownedLock;
      w.status = ObjectStatus::kUnknown;
      w.name = kind + " " + w.name;
      w.detail = site->detail.empty() ? kind + ": it records no owner, so who holds it is not known"
                                      : std::string(site->detail);
      break;
  }
  return w;
}

/// A wait on a lock (or a joined thread) whose owner the decoding named.
WaitObject FutexWaits::lockWait(std::uint64_t uaddr, const FutexDecode& decoded) {
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
      w.name = "thread " +
               std::to_string(lookup_.hostTid(decoded.owner_tid).value_or(decoded.owner_tid));
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
      w.detail += missingOwner(decoded.owner_tid, decoded.process_shared);
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
std::optional<std::chrono::milliseconds> FutexWaits::futexTimeout(const SyscallState& sc) {
  constexpr std::uint32_t kCmdMask = 127;
  constexpr std::uint32_t kFutexWait = 0;
  constexpr std::uint32_t kFutexLockPi = 6;
  constexpr std::uint32_t kFutexClockRealtime = 256;
  const auto op = static_cast<std::uint32_t>(sc.args[1]);
  const std::uint32_t cmd = op & kCmdMask;
  const bool absolute = cmd != kFutexWait;
  const clockid_t clock =
      cmd == kFutexLockPi || (op & kFutexClockRealtime) != 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
  return timeoutAt(lookup_, sc.args[3], absolute, clock);
}

}  // namespace wctmon::linux_platform
