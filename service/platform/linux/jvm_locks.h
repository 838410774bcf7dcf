#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model/result.h"
#include "model/snapshot.h"
#include "platform/linux/jvm_attach.h"
#include "platform/linux/jvm_thread_dump.h"

namespace wctmon::linux_platform {

/// A HotSpot thread waiting in the JVM's park or monitor entry with no timeout: what it waits on
/// at the Java level only the JVM's thread dump says.
struct JavaWaiter {
  std::int32_t tid = 0;
  /// Entering a monitor: HotSpot wakes such a thread now and then (up to once a second) to try
  /// the monitor again, and parks it again when it is still taken.
  bool monitor = false;
  /// Times it was scheduled in, and its CPU time, when read (schedstat): a thread that has not
  /// run since a dump, or only for those retries, is still where that dump saw it.
  std::optional<std::uint64_t> runs;
  std::uint64_t cpu_ns = 0;
};

/// Whether `thread` is such a waiter (named so by the call site of its futex wait): a park
/// without timeout, or a monitor entry.
[[nodiscard]] bool isJavaWaiter(const ThreadSample& thread);

/// Gives the waiters of `process` what `dump` says of them: a monitor or java.util.concurrent
/// lock with its owning thread (an edge of the wait graph), a condition, latch or queue wait (no
/// owner), and each one's Java frames. Only threads in `covered` (those the dump saw in the wait
/// they are in now) are changed.
void applyJavaDump(ProcessSample& process, const JavaDump& dump,
                   const std::vector<std::int32_t>& covered);

/// When to ask a JVM for a thread dump: a dump pauses every Java thread at a safepoint, so it is
/// asked only for waiters that have waited past a bound and that no earlier dump saw in the same
/// wait, and at most once per interval per process.
struct JvmDumpPolicy {
  std::chrono::milliseconds min_wait{1000};
  std::chrono::milliseconds min_interval{10000};
  /// The CPU time a waiter may have used per time it ran since the dump and still count as not
  /// having moved: a monitor entry's retry, or a stop of our own capture, takes some 30 us.
  /// Generous on purpose: the edges of threads the dump covers are edges the dump had, so a cycle
  /// among them was a cycle in the dump, a Java-level deadlock that nothing ends.
  std::chrono::microseconds retry_cpu{500};
};

/// What is known of one JVM: its last dump and the waiters it saw. Pure state; JvmLocks keeps one
/// per process.
class JvmDumpState {
 public:
  using Clock = std::chrono::steady_clock;

  /// The waiters of `waiters` that the last dump saw where they are now.
  [[nodiscard]] std::vector<std::int32_t> covered(const std::vector<JavaWaiter>& waiters,
                                                  const JvmDumpPolicy& policy) const;
  /// Notes which threads wait now, and since when: `waited` (parallel to `waiters`) is how long
  /// each has not run; a thread seen waiting in the previous sample too keeps its earlier start,
  /// so that a monitor entry's retries do not start its wait again.
  void observe(const std::vector<JavaWaiter>& waiters,
               const std::vector<std::optional<std::chrono::milliseconds>>& waited,
               Clock::time_point now);
  /// The waiters of `waiters` not seen waiting by the previous observe.
  [[nodiscard]] std::vector<std::int32_t> unseen(const std::vector<JavaWaiter>& waiters) const;
  /// Whether to ask now: some waiter is not covered and has waited at least the bound (any
  /// time, when `on_demand`), none was asked within the interval, and the JVM is not one that
  /// refuses.
  [[nodiscard]] bool shouldAsk(const std::vector<JavaWaiter>& waiters, const JvmDumpPolicy& policy,
                               bool on_demand, Clock::time_point now) const;
  /// Records an answer: a dump (seeing `waiters` as they were before it was asked) or why there
  /// is none.
  void recordDump(std::shared_ptr<const JavaDump> dump, const std::vector<JavaWaiter>& waiters,
                  Clock::time_point now, std::chrono::microseconds took);
  void recordFailure(std::string error, bool permanent, Clock::time_point now);

  [[nodiscard]] const std::shared_ptr<const JavaDump>& dump() const { return dump_; }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] std::chrono::microseconds took() const { return took_; }

 private:
  std::shared_ptr<const JavaDump> dump_;
  /// The waiters as the dump found them.
  std::map<std::int32_t, JavaWaiter> seen_;
  std::map<std::int32_t, Clock::time_point> waiting_since_;
  std::optional<Clock::time_point> asked_;
  std::string error_;
  bool refused_ = false;
  std::chrono::microseconds took_{0};
};

/// The Java-level locks of HotSpot processes, from their thread dumps (`jstack -l`), kept per
/// process across samples. Shared by every sampling session; safe to call from several threads.
class JvmLocks {
 public:
  /// Asks a JVM; replaced in tests.
  using DumpRequest = std::function<Result<JvmThreadDumpText>(Pid, std::uint64_t start_time)>;

  explicit JvmLocks(JvmDumpPolicy policy = {}, DumpRequest request = {});

  /// Applies what the JVM's thread dump says to the Java waiters of `process`, asking for a
  /// dump when the policy says to (`on_demand`: a person waits for this answer, so the wait
  /// bound is not waited for). A process without Java waiters costs nothing.
  void apply(ProcessSample& process, bool on_demand);

 private:
  struct Entry {
    std::uint64_t start_time = 0;
    JvmDumpState state;
    bool asking = false;
  };

  JvmDumpPolicy policy_;
  DumpRequest request_;
  std::mutex mutex_;
  std::map<std::int32_t, Entry> entries_;
};

}  // namespace wctmon::linux_platform
