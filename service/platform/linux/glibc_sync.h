#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace wctmon::linux_platform {

/// Bytes read around a futex word: [uaddr - kFutexWindowBefore, uaddr + kFutexWindowAfter).
/// Large enough to hold a glibc pthread_mutex_t starting at uaddr and a pthread_rwlock_t whose
/// futex word is any of the ones glibc waits on.
inline constexpr std::size_t kFutexWindowBefore = 16;
inline constexpr std::size_t kFutexWindowAfter = 56;
inline constexpr std::size_t kFutexWindowSize = kFutexWindowBefore + kFutexWindowAfter;

struct FutexWindow {
  std::array<std::byte, kFutexWindowSize> bytes{};
  /// The part of `bytes` that was readable: a futex word near the edge of a mapping leaves the
  /// rest out.
  std::size_t valid_begin = 0;
  std::size_t valid_end = 0;
};

/// What a futex wait turned out to be.
enum class FutexWaitKind {
  kMutex,                // owner = the locking thread (or gone: abandoned)
  kRwLockWrite,          // owner = the writer
  kRwLockRead,           // read-held, owners unknown
  kJoin,                 // owner = the joined thread
  kPriorityInheritance,  // FUTEX_LOCK_PI: owner from the futex word
  kUnknown,              // condition variable, semaphore, barrier, anything without a known owner
};

struct FutexDecode {
  FutexWaitKind kind = FutexWaitKind::kUnknown;
  std::int32_t owner_tid = 0;
  /// Where the lock object starts relative to the futex word (a rwlock's word is inside it).
  std::int64_t object_offset = 0;
  /// The owner id no longer names a live thread that could unlock it (robust owner-died, an owner
  /// that exited holding it, or, for a private lock, a thread outside the process).
  bool owner_gone = false;
  bool process_shared = false;
  std::uint32_t readers = 0;
  std::string detail;
};

/// Answers whether `tid` is a thread that could own a lock: in the reading process for private
/// locks, anywhere in the system for process-shared ones.
using TidValidator = std::function<bool(std::int32_t tid, bool process_shared)>;

/// Which glibc object the function that made the futex call says the word belongs to.
enum class GlibcObject {
  /// The call site is not known (no symbols): only objects whose shape is unmistakable (a
  /// priority-inheritance word, a mutex with a live owner, a joined thread's id) are decoded;
  /// the shape of a rwlock is also that of a condition variable with zeroes after it.
  kUnknownCallSite,
  kMutex,
  kRwLock,
  kJoin,
};

/// Decodes a thread's futex wait from the syscall arguments and the memory around the word, as
/// the object the call site names. An owner is reported only when the glibc object around the
/// word is consistent and the owner validates; anything else is kUnknown, never a guess.
[[nodiscard]] FutexDecode decodeFutexWait(const FutexWindow& window, std::uint32_t op,
                                          std::uint32_t val, std::int32_t self_tid,
                                          const TidValidator& is_live, GlibcObject object);

/// glibc x86-64 (2.34 on) struct pthread, which a pthread_t points to: its first word points to
/// itself (the TLS ABI's thread control block), and the thread's TID is at kPthreadTidOffset
/// (the word pthread_join waits on).
inline constexpr std::size_t kPthreadTidOffset = 0x2d0;

/// Bytes of a pthread_mutex_t that decodePriorityInheritanceMutex reads.
inline constexpr std::size_t kMutexHeadSize = 20;

/// Decodes `bytes` (the first kMutexHeadSize bytes at some address) as a priority-inheritance
/// pthread_mutex_t held by a live thread other than `self_tid`; nullopt when they are not one.
[[nodiscard]] std::optional<FutexDecode> decodePriorityInheritanceMutex(
    const std::array<std::byte, kMutexHeadSize>& bytes, std::int32_t self_tid,
    const TidValidator& is_live);

}  // namespace wctmon::linux_platform
