#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/executor.h"
#include "model/ids.h"
#include "model/result.h"
#include "model/snapshot.h"
#include "model/wait_model.h"

namespace wctmon {

/// What a sample reads beyond the threads of its process.
struct SampleScope {
  /// The processes its waits lead to (WCT_OUT_OF_PROC_FLAG).
  bool out_of_proc = false;
  /// With out_of_proc, WCT's further flags (Windows).
  WctFlags wct{};
  /// A person waits for this answer (an analysis asked for), rather than a periodic sample: a
  /// runtime that must be asked what its threads wait on (a JVM's thread dump, which pauses it)
  /// is asked at once instead of only after its threads have waited past a bound.
  bool on_demand = false;
  /// Where the platform cannot read waits at all (Windows without WCT: Wine), the threads alone
  /// (names and CPU time, waits unknown, and a warning saying why) rather than an error: what a
  /// periodic sample needs to find busy threads. Otherwise such a sample fails, saying why.
  bool threads_alone = false;
};

/// A session on one process (or on the whole system) through which its wait chains are sampled
/// again and again: WCT's session on Windows (OpenThreadWaitChainSession with
/// WCT_ASYNC_OPEN_FLAG), on Linux what makes the next /proc sample cheaper (kept-open
/// descriptors, the last reading of each thread).
///
/// Operations are asynchronous: each delivers its result to the completion handler it was given,
/// posted to the executor it was given, exactly once. One operation at a time: one started while
/// another is in flight, or while the platform still works on a cancelled one, completes with
/// kBusy. Destroying a session cancels the operation in flight.
class WaitChainSession {
 public:
  using SampleHandler = std::function<void(Result<Snapshot>)>;
  using ThreadsHandler = std::function<void(Result<std::vector<ThreadSample>>)>;

  virtual ~WaitChainSession() = default;

  /// Samples every thread of the session's process (first in the snapshot) and, as far as
  /// `scope` says, the processes its waits lead to; a system session samples every process.
  /// Fails with kNoSuchProcess or kAccessDenied when the process cannot be read.
  virtual void asyncSample(SampleScope scope, Executor executor, SampleHandler done) = 0;

  /// Reads the given threads again, with their waits and owners, to confirm a cycle. A thread
  /// that is gone comes back with status Error.
  virtual void asyncResample(std::vector<ThreadRef> threads, Executor executor,
                             ThreadsHandler done) = 0;

  /// Completes the operation in flight, if any, with kCancelled now, without waiting for the
  /// platform: a read stuck in the kernel cannot be abandoned, only left behind (its result is
  /// dropped, and the session is busy until it ends).
  virtual void cancel() = 0;

  /// How long each thread has been off the CPU, which for a blocked thread is how long it has
  /// waited, where the platform can tell; nullopt where it cannot (never a made-up 0). Cheap
  /// enough to call from a completion handler for the threads of reported chains.
  [[nodiscard]] virtual std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
      std::span<const ThreadRef> threads) {
    return std::vector<std::optional<std::chrono::milliseconds>>(threads.size());
  }
};

/// Opens wait-chain sessions: /proc and process memory on Linux, Wait Chain Traversal on
/// Windows. The work of a sample runs where the source was told to run it (the service's pool);
/// only the completion comes back to the caller's executor.
class WaitChainSource {
 public:
  virtual ~WaitChainSource() = default;

  /// A session on `pid`. Opening reads nothing yet: a process that is gone or unreadable fails
  /// its first sample (kNoSuchProcess, kAccessDenied).
  [[nodiscard]] virtual Result<std::unique_ptr<WaitChainSession>> open(Pid pid) = 0;

  /// A session over every process of the system (chains followed across processes).
  [[nodiscard]] virtual Result<std::unique_ptr<WaitChainSession>> openSystem() = 0;

  /// What the source is ("linux-proc", "windows-wct") and whether it works on this host: not
  /// at all (WCT missing), or only in part (no privilege to read other users' processes).
  struct Availability {
    std::string name;
    bool available = true;
    /// Why it is unavailable, or what it cannot do here; empty when nothing is amiss.
    std::string reason;
  };
  [[nodiscard]] virtual Availability availability() const = 0;
};

}  // namespace wctmon
