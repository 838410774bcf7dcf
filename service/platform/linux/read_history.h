#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "model/snapshot.h"
#include "platform/linux/fd_resolver.h"

namespace wctmon::linux_platform {

/// The latest read of each process that periodic samples follow chains through, shared by the
/// samples of every session. A cycle through a thousand watched processes is then read about
/// once per interval, not once per member and interval (each member's sample followed the whole
/// ring, and its confirmation read the ring again): a sample takes another's recent read of a
/// process it follows into, and a cycle whose every thread two reads have shown in the same
/// wait without running, over one common moment, is confirmed by those reads.
///
/// Why that is enough: a thread shown blocked in the same wait, scheduled in the same number of
/// times, by a read that ended at `since` and by one that began at `latest`, was blocked in that
/// wait throughout [since, latest]. When those spans of every thread of a cycle share a moment,
/// every thread waited on the next one at that moment: the cycle was whole, and a cycle of
/// untimed waits does not undo itself. That is what a second read of each thread after the
/// first proves, too.
class ReadHistory {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  /// How long a read is kept without being read again.
  static constexpr std::chrono::seconds kKeptFor{10};

  /// Who read a process.
  enum class ReadBy {
    /// Its own sample.
    kItself,
    /// A sample that followed a chain into it.
    kFollower,
  };

  /// The latest whole read of `pid`, when it began at `not_before` or later; asked `now` by a
  /// sample that follows a chain into it.
  [[nodiscard]] std::optional<ProcessSample> recent(Pid pid, TimePoint not_before, TimePoint now);

  /// Whether a sample followed a chain into `pid` within kKeptFor before `now`: its own samples
  /// then keep their reads for the followers.
  [[nodiscard]] bool followed(Pid pid, TimePoint now) const;

  /// Keeps `process`, read whole by `by` between `started` and `ended`, as its latest read.
  void keep(const ProcessSample& process, TimePoint started, TimePoint ended, ReadBy by);

  /// Keeps some threads of `process` read again between `started` and `ended` (a confirmation's
  /// read): their latest reads, when the process's read is kept.
  void keepThreads(const ProcessSample& process, TimePoint started, TimePoint ended);

  /// The latest reads of `threads` when every one of them is shown blocked in its wait over a
  /// moment common to all (see the class); nullopt when one is not, or was not read.
  [[nodiscard]] std::optional<std::vector<ThreadSample>> provenBlocked(
      std::span<const ThreadRef> threads) const;

  /// How many processes are kept.
  [[nodiscard]] std::size_t size() const;

 private:
  struct Thread {
    ThreadSample sample;
    /// When the read that gave `sample` began.
    TimePoint read;
    /// When the first read showing it in this wait, with these switches, ended; nullopt when it
    /// is not blocked.
    std::optional<TimePoint> since;
  };
  struct Entry {
    Pid pid;
    std::string name;
    std::uint64_t start_time = 0;
    std::string title;
    /// When its latest whole read began.
    TimePoint read;
    /// When a sample last followed a chain into it.
    std::optional<TimePoint> followed;
    /// By tid.
    std::unordered_map<std::int32_t, Thread> threads;
    /// In the order the read gave them.
    std::vector<std::int32_t> order;
  };

  /// The thread's record after a read of it over [started, ended] that gave `sample`.
  static Thread update(const Thread* before, ThreadSample sample, TimePoint started,
                       TimePoint ended);
  void sweep(TimePoint now);

  mutable std::mutex mutex_;
  std::unordered_map<std::int32_t, Entry> entries_;
  TimePoint swept_{};
};

/// What the periodic samples of every session share: the latest reads of the processes chains
/// lead to, and the table of every descriptor of the system.
struct SharedReads {
  ReadHistory processes;
  SharedFdLinks descriptors;
};

}  // namespace wctmon::linux_platform
