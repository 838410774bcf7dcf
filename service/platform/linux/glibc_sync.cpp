#include "platform/linux/glibc_sync.h"

#include <cstring>

namespace wctmon::linux_platform {
namespace {

// Linux futex(2) constants (uapi/linux/futex.h).
constexpr std::uint32_t kFutexWait = 0;
constexpr std::uint32_t kFutexLockPi = 6;
constexpr std::uint32_t kFutexWaitBitset = 9;
constexpr std::uint32_t kFutexLockPi2 = 13;
constexpr std::uint32_t kFutexPrivateFlag = 128;
constexpr std::uint32_t kFutexClockRealtime = 256;
constexpr std::uint32_t kFutexTidMask = 0x3fffffff;
constexpr std::uint32_t kFutexOwnerDied = 0x40000000;

// glibc x86-64 pthread_mutex_t (bits/struct_mutex.h) and its kind bits (pthreadP.h).
constexpr std::size_t kMutexLock = 0;
constexpr std::size_t kMutexCount = 4;
constexpr std::size_t kMutexOwner = 8;
constexpr std::size_t kMutexKind = 16;
constexpr std::uint32_t kKindMask = 3;
constexpr std::uint32_t kKindRobust = 16;
constexpr std::uint32_t kKindPrioInherit = 32;
constexpr std::uint32_t kKindPrioProtect = 64;
constexpr std::uint32_t kKindPshared = 128;
constexpr std::uint32_t kKindElision = 256;
constexpr std::uint32_t kKindNoElision = 512;
constexpr std::uint32_t kKnownKindBits = kKindMask | kKindRobust | kKindPrioInherit |
                                         kKindPrioProtect | kKindPshared | kKindElision |
                                         kKindNoElision;
constexpr std::int32_t kMutexInconsistent = 0x7fffffff;
constexpr std::int32_t kMutexNotRecoverable = 0x7ffffffe;

// glibc x86-64 pthread_rwlock_t (bits/struct_rwlock.h) and its __readers bits.
constexpr std::size_t kRwReaders = 0;
constexpr std::size_t kRwWrphaseFutex = 8;
constexpr std::size_t kRwWritersFutex = 12;
constexpr std::size_t kRwPad3 = 16;
constexpr std::size_t kRwPad4 = 20;
constexpr std::size_t kRwCurWriter = 24;
constexpr std::size_t kRwShared = 28;
constexpr std::size_t kRwPad1 = 33;
constexpr std::size_t kRwPad2 = 40;
constexpr std::size_t kRwFlags = 48;
constexpr std::size_t kRwSize = 56;
constexpr std::uint32_t kRwWrphase = 1;
constexpr std::uint32_t kRwWrlocked = 2;
constexpr std::uint32_t kRwRwaiting = 4;
constexpr unsigned kRwReaderShift = 3;

/// A view of the window as memory addressed relative to the futex word.
class Window {
 public:
  explicit Window(const FutexWindow& w) : w_(w) {}

  /// Whether [offset, offset + size) relative to uaddr lies inside the readable window.
  [[nodiscard]] bool has(std::ptrdiff_t offset, std::size_t size) const {
    const auto begin = offset + static_cast<std::ptrdiff_t>(kFutexWindowBefore);
    return begin >= static_cast<std::ptrdiff_t>(w_.valid_begin) &&
           begin + static_cast<std::ptrdiff_t>(size) <= static_cast<std::ptrdiff_t>(w_.valid_end);
  }

  template <typename T>
  [[nodiscard]] T at(std::ptrdiff_t offset) const {
    T value;
    std::memcpy(&value, w_.bytes.data() + kFutexWindowBefore + offset, sizeof(T));
    return value;
  }

 private:
  const FutexWindow& w_;
};

std::string mutexKindName(std::uint32_t kind) {
  std::string out;
  switch (kind & kKindMask) {
    case 0:
      out = "normal";
      break;
    case 1:
      out = "recursive";
      break;
    case 2:
      out = "error-checking";
      break;
    default:
      out = "adaptive";
      break;
  }
  if (kind & kKindRobust) out += ", robust";
  if (kind & kKindPshared) out += ", process-shared";
  return "pthread_mutex (" + out + ")";
}

std::optional<FutexDecode> asMutex(const Window& w, std::uint32_t op, std::uint32_t val,
                                   const TidValidator& is_live) {
  if (!w.has(0, 24)) return std::nullopt;
  const auto lock = w.at<std::uint32_t>(kMutexLock);
  const auto owner = w.at<std::int32_t>(kMutexOwner);
  const auto kind = w.at<std::uint32_t>(kMutexKind);
  if ((kind & ~kKnownKindBits) != 0 || (kind & (kKindPrioInherit | kKindPrioProtect)) != 0) {
    return std::nullopt;
  }
  const bool robust = (kind & kKindRobust) != 0;
  const bool pshared = (kind & kKindPshared) != 0;
  if (robust) {
    // Robust mutexes keep the owner's TID in the lock word and wait with that word plus
    // FUTEX_WAITERS; glibc always uses shared futex operations for them.
    if ((lock & kFutexTidMask) == 0 || (val & kFutexTidMask) != (lock & kFutexTidMask)) {
      return std::nullopt;
    }
  } else {
    // A normal/recursive/error-checking/adaptive mutex is waited on with the value 2
    // ("locked, with waiters"), with the private flag exactly when the mutex is not shared.
    if (val != 2 || (lock != 1 && lock != 2)) return std::nullopt;
    if (((op & kFutexPrivateFlag) != 0) == pshared) return std::nullopt;
  }
  FutexDecode out;
  out.kind = FutexWaitKind::kMutex;
  out.process_shared = pshared;
  out.detail = mutexKindName(kind);
  if ((kind & kKindMask) == 1) {
    out.detail += ", recursion count " + std::to_string(w.at<std::uint32_t>(kMutexCount));
  }
  const std::int32_t lock_owner = static_cast<std::int32_t>(lock & kFutexTidMask);
  if (robust && (lock & kFutexOwnerDied) != 0) {
    out.owner_tid = lock_owner;
    out.owner_gone = true;
    out.detail += ", owner died";
    return out;
  }
  if (owner == kMutexInconsistent || owner == kMutexNotRecoverable) {
    out.owner_gone = true;
    out.detail += ", inconsistent";
    return out;
  }
  // The owner is written just after the lock word is taken and cleared just before release, so
  // 0 is a moment between the two: no owner can be named.
  if (owner <= 0) return std::nullopt;
  if (robust && owner != lock_owner) return std::nullopt;
  out.owner_tid = owner;
  // Who the missing owner was (exited, or a thread of another process) is the caller's to say.
  if (!is_live(owner, pshared)) out.owner_gone = true;
  return out;
}

bool rwlockLayoutOk(const Window& w, std::ptrdiff_t base, std::uint32_t op) {
  if (!w.has(base, kRwSize)) return false;
  const auto shared = w.at<std::int32_t>(base + kRwShared);
  const auto flags = w.at<std::uint32_t>(base + kRwFlags);
  if (w.at<std::uint32_t>(base + kRwPad3) != 0 || w.at<std::uint32_t>(base + kRwPad4) != 0 ||
      w.at<std::uint64_t>(base + kRwPad2) != 0 || (shared != 0 && shared != 1) || flags > 2) {
    return false;
  }
  for (std::size_t i = 0; i < 7; ++i) {
    if (w.at<std::uint8_t>(base + static_cast<std::ptrdiff_t>(kRwPad1 + i)) != 0) return false;
  }
  return ((op & kFutexPrivateFlag) != 0) == (shared == 0);
}

/// What holds a rwlock. `queued_writer`: the waiter sleeps on __writers_futex, behind another
/// writer that took the writers' turn (and may itself wait for readers).
std::optional<FutexDecode> rwlockOwner(const Window& w, std::ptrdiff_t base,
                                       const TidValidator& is_live, bool queued_writer) {
  const auto readers = w.at<std::uint32_t>(base + kRwReaders);
  const auto writer = w.at<std::int32_t>(base + kRwCurWriter);
  const bool shared = w.at<std::int32_t>(base + kRwShared) != 0;
  FutexDecode out;
  out.process_shared = shared;
  out.object_offset = base;
  if ((readers & kRwWrphase) != 0 && (readers & kRwWrlocked) != 0 && writer > 0) {
    if (!is_live(writer, shared)) return std::nullopt;
    out.kind = FutexWaitKind::kRwLockWrite;
    out.owner_tid = writer;
    out.detail = "pthread_rwlock held for writing";
    return out;
  }
  if (queued_writer) {
    // The writer ahead is not recorded until it has the lock (__cur_writer); what is known is
    // that it waits, and for how many readers.
    out.kind = FutexWaitKind::kRwLockRead;
    out.readers = (readers & kRwWrphase) == 0 ? readers >> kRwReaderShift : 0;
    out.detail = "pthread_rwlock wanted for writing, behind another writer";
    if (out.readers > 0) {
      out.detail += " that waits for " + std::to_string(out.readers) + " reader(s) to unlock it";
    }
    out.detail += "; readers and queued writers are not recorded, owner unknown";
    return out;
  }
  if ((readers & kRwWrphase) == 0 && writer == 0 && (readers >> kRwReaderShift) > 0) {
    out.kind = FutexWaitKind::kRwLockRead;
    out.readers = readers >> kRwReaderShift;
    out.detail = "pthread_rwlock held for reading by " + std::to_string(out.readers) +
                 " reader(s); readers are not recorded, owner unknown";
    return out;
  }
  return std::nullopt;
}

std::optional<FutexDecode> asRwLock(const Window& w, std::uint32_t op,
                                    const TidValidator& is_live) {
  // Writers waiting for another writer sleep on __writers_futex.
  if (rwlockLayoutOk(w, -static_cast<std::ptrdiff_t>(kRwWritersFutex), op) &&
      w.at<std::uint32_t>(0) != 0) {
    if (auto d = rwlockOwner(w, -static_cast<std::ptrdiff_t>(kRwWritersFutex), is_live, true)) {
      return d;
    }
  }
  // Readers waiting for a writer, and writers waiting for readers, sleep on __wrphase_futex.
  if (rwlockLayoutOk(w, -static_cast<std::ptrdiff_t>(kRwWrphaseFutex), op)) {
    if (auto d = rwlockOwner(w, -static_cast<std::ptrdiff_t>(kRwWrphaseFutex), is_live, false)) {
      return d;
    }
  }
  // Readers of a writer-preferring lock sleep on __readers with PTHREAD_RWLOCK_RWAITING set.
  if (rwlockLayoutOk(w, 0, op) && (w.at<std::uint32_t>(0) & kRwRwaiting) != 0) {
    if (auto d = rwlockOwner(w, 0, is_live, false)) return d;
  }
  return std::nullopt;
}

std::optional<FutexDecode> asJoin(const Window& w, std::uint32_t val, std::int32_t self_tid,
                                  const TidValidator& is_live) {
  // pthread_join sleeps on the joined thread's tid word, expecting its TID there; the kernel
  // clears the word when that thread exits (CLONE_CHILD_CLEARTID).
  const auto word = w.at<std::uint32_t>(0);
  const auto tid = static_cast<std::int32_t>(val);
  if (word != val || tid <= 0 || tid == self_tid || !is_live(tid, false)) return std::nullopt;
  FutexDecode out;
  out.kind = FutexWaitKind::kJoin;
  out.owner_tid = tid;
  out.detail = "pthread_join";
  return out;
}

}  // namespace

FutexDecode decodeFutexWait(const FutexWindow& window, std::uint32_t op, std::uint32_t val,
                            std::int32_t self_tid, const TidValidator& is_live,
                            GlibcObject object) {
  const Window w(window);
  const std::uint32_t cmd = op & ~(kFutexPrivateFlag | kFutexClockRealtime);
  if (!w.has(0, sizeof(std::uint32_t))) return {};
  if (cmd == kFutexLockPi || cmd == kFutexLockPi2) {
    // Priority-inheritance futexes hold the owner's TID in the word itself (kernel ABI).
    const auto word = w.at<std::uint32_t>(0);
    FutexDecode out;
    out.kind = FutexWaitKind::kPriorityInheritance;
    out.owner_tid = static_cast<std::int32_t>(word & kFutexTidMask);
    out.process_shared = (op & kFutexPrivateFlag) == 0;
    out.detail = "priority-inheritance mutex";
    if ((word & kFutexOwnerDied) != 0 || out.owner_tid == 0 ||
        !is_live(out.owner_tid, out.process_shared)) {
      out.owner_gone = true;
      out.detail += ", owner gone";
    }
    return out;
  }
  if (cmd != kFutexWait && cmd != kFutexWaitBitset) return {};
  const bool any = object == GlibcObject::kUnknownCallSite;
  if (any || object == GlibcObject::kMutex) {
    if (auto d = asMutex(w, op, val, is_live)) return *d;
  }
  if (object == GlibcObject::kRwLock) {
    if (auto d = asRwLock(w, op, is_live)) return *d;
  }
  if (any || object == GlibcObject::kJoin) {
    if (auto d = asJoin(w, val, self_tid, is_live)) return *d;
  }
  FutexDecode unknown;
  unknown.detail = "no owner is recorded";
  return unknown;
}

std::optional<FutexDecode> decodePriorityInheritanceMutex(
    const std::array<std::byte, kMutexHeadSize>& bytes, std::int32_t self_tid,
    const TidValidator& is_live) {
  std::uint32_t lock = 0;
  std::int32_t owner = 0;
  std::uint32_t kind = 0;
  std::memcpy(&lock, bytes.data() + kMutexLock, sizeof(lock));
  std::memcpy(&owner, bytes.data() + kMutexOwner, sizeof(owner));
  std::memcpy(&kind, bytes.data() + kMutexKind, sizeof(kind));
  if ((kind & ~kKnownKindBits) != 0 || (kind & kKindPrioInherit) == 0 ||
      (kind & kKindPrioProtect) != 0) {
    return std::nullopt;
  }
  // glibc keeps the owner in the word (with FUTEX_WAITERS) and in __owner alike.
  const auto holder = static_cast<std::int32_t>(lock & kFutexTidMask);
  const bool pshared = (kind & kKindPshared) != 0;
  if (holder <= 0 || holder == self_tid || owner != holder || !is_live(holder, pshared)) {
    return std::nullopt;
  }
  FutexDecode out;
  out.kind = FutexWaitKind::kPriorityInheritance;
  out.owner_tid = holder;
  out.process_shared = pshared;
  out.detail = "priority-inheritance " + mutexKindName(kind);
  if ((lock & kFutexOwnerDied) != 0) {
    out.owner_gone = true;
    out.detail += ", owner died";
  }
  return out;
}

}  // namespace wctmon::linux_platform
