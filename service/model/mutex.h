#pragma once

// A mutex whose lock rules the compiler checks: members say which mutex guards them
// (WCTMON_GUARDED_BY), functions which mutex they need held or not held (WCTMON_REQUIRES,
// WCTMON_EXCLUDES), and Clang's -Wthread-safety proves every access keeps them
// (scripts/check-thread-safety.sh, in the test command). Other compilers see plain std::mutex.

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define WCTMON_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WCTMON_THREAD_ANNOTATION(x)
#endif

#define WCTMON_CAPABILITY(name) WCTMON_THREAD_ANNOTATION(capability(name))
#define WCTMON_SCOPED_CAPABILITY WCTMON_THREAD_ANNOTATION(scoped_lockable)
#define WCTMON_GUARDED_BY(m) WCTMON_THREAD_ANNOTATION(guarded_by(m))
#define WCTMON_PT_GUARDED_BY(m) WCTMON_THREAD_ANNOTATION(pt_guarded_by(m))
#define WCTMON_REQUIRES(...) WCTMON_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define WCTMON_EXCLUDES(...) WCTMON_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define WCTMON_ACQUIRE(...) WCTMON_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define WCTMON_RELEASE(...) WCTMON_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace wctmon {

/// std::mutex, as a capability the annotations name.
class WCTMON_CAPABILITY("mutex") Mutex {
 public:
  void lock() WCTMON_ACQUIRE() { mutex_.lock(); }
  void unlock() WCTMON_RELEASE() { mutex_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

/// Holds a Mutex from construction to destruction, or until unlock(); waits on condition
/// variables with it held.
class WCTMON_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) WCTMON_ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() WCTMON_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  /// Lets the mutex go before the end of the scope.
  void unlock() WCTMON_RELEASE() { lock_.unlock(); }
  /// Takes it again after unlock().
  void lock() WCTMON_ACQUIRE() { lock_.lock(); }

  /// Waits on `cv` until `done()`, the mutex let go while waiting.
  template <typename Predicate>
  void wait(std::condition_variable& cv, Predicate done) {
    cv.wait(lock_, done);
  }
  /// The same, until `deadline` at most; returns done().
  template <typename TimePoint, typename Predicate>
  bool waitUntil(std::condition_variable& cv, TimePoint deadline, Predicate done) {
    return cv.wait_until(lock_, deadline, done);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace wctmon
