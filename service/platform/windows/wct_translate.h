#pragma once

// WCT's answers in the core's model: each thread's chain (WAITCHAIN_NODE_INFO nodes) becomes the
// thread's sample (its state and the object it waits on, with the owner WCT resolved), and the
// samples of a process make the snapshot whose wait graph (core) finds the cycles.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/snapshot.h"
#include "platform/windows/wct_api.h"

namespace wctmon::windows_platform {

/// What GetThreadWaitChain returned for one thread, copied out of the request's buffers.
struct WctThreadChain {
  DWORD tid = 0;
  /// ERROR_SUCCESS, or the documented failures: ERROR_MORE_DATA and ERROR_TOO_MANY_THREADS (the
  /// nodes are still a valid start of the chain), ERROR_ACCESS_DENIED, ERROR_OBJECT_NOT_FOUND
  /// (the thread is gone), ERROR_INVALID_PARAMETER, ERROR_CANCELLED.
  DWORD status = ERROR_SUCCESS;
  std::vector<WAITCHAIN_NODE_INFO> nodes;
  bool is_cycle = false;
};

/// A process as the source found it before asking WCT: its threads and what identifies it.
struct ProcessThreads {
  Pid pid;
  std::string name;
  /// Creation time, in 100 ns units since 1601 (FILETIME): with the pid it identifies the
  /// process across PID reuse.
  std::uint64_t start_time = 0;
  std::vector<DWORD> tids;
  /// The threads' names, in the order of `tids` (empty: unnamed); may be shorter.
  std::vector<std::string> thread_names;
  /// The threads' CPU time (kernel + user) when they were listed, in the order of `tids`
  /// (nullopt: not readable); may be shorter.
  std::vector<std::optional<std::chrono::nanoseconds>> cpu_times{};
};

/// The sample of the thread whose chain this is. Warnings (a chain cut short, a failure WCT
/// reported) are appended to `warnings`.
[[nodiscard]] ThreadSample threadFromChain(Pid pid, const WctThreadChain& chain,
                                           std::vector<std::string>& warnings);

/// The snapshot of `process` from the chains of its threads, in the order of `process.tids`.
/// With `out_of_proc`, the threads of other processes that the chains pass through are added
/// as processes of their own (their part of the chain is what WCT said of them).
[[nodiscard]] Snapshot snapshotFromChains(const ProcessThreads& process,
                                          std::span<const WctThreadChain> chains, bool out_of_proc);

/// The snapshot of `process` where WCT cannot be asked (it refuses to open a session): its
/// threads with their names and CPU time, their waits unknown (ObjectStatus::kUnknown, no
/// wait), and `why` as a warning. Busy threads are found from it; hangs and deadlocks are not.
[[nodiscard]] Snapshot snapshotWithoutChains(const ProcessThreads& process, const std::string& why);

/// The core's name of a WCT object type / status (an unknown value is Unknown).
[[nodiscard]] ObjectType objectTypeOf(WCT_OBJECT_TYPE type);
[[nodiscard]] ObjectStatus objectStatusOf(WCT_OBJECT_STATUS status);

}  // namespace wctmon::windows_platform
