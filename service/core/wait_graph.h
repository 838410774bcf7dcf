#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/snapshot.h"
#include "model/wait_model.h"

namespace wctmon {

/// The default node limit of a chain (WCT's own cap is 16).
inline constexpr std::uint32_t kDefaultMaxNodes = 64;

/// A wait with a timeout closes a cycle only when it has more than this left: a thread that
/// gives up sooner breaks the cycle by itself (a back-off `try_lock_for`).
inline constexpr std::chrono::milliseconds kDefaultTimedWaitBound{30000};

/// How chains are built from a snapshot.
struct GraphOptions {
  std::uint32_t max_nodes = kDefaultMaxNodes;
  /// Timed waits that end sooner than this are never stuck (see kDefaultTimedWaitBound).
  std::chrono::milliseconds timed_wait_bound = kDefaultTimedWaitBound;
  /// Follow chains into processes other than the one the chain starts in.
  bool out_of_proc = false;
  /// Which threads get a chain (stuck ones always do); empty = every thread.
  std::function<bool(const ThreadSample&)> chain_filter = {};
};

/// Chains and cycles of one snapshot.
struct GraphAnalysis {
  std::vector<WaitChain> chains;
  std::vector<Deadlock> deadlocks;
};

/// Builds one chain per thread of the `roots` processes and finds every deadlock that involves
/// them, over the whole wait graph of `snapshot`. A thread is stuck when it waits on an owned
/// object, without a timeout that ends sooner than the bound, is not stopped (a stopped thread
/// waits for SIGCONT, not for its object), and every thread that could release it is stuck too;
/// the cycles among stuck threads are the deadlocks, and stuck threads outside the cycles are
/// their spurs.
///
/// A chain follows a lock's owner thread; it follows a wait held by whole processes (a pipe, a
/// file lock, a child) only into a stuck thread of them, and otherwise ends at the object, whose
/// node names the holders and what their threads do. A chain is marked a cycle only when it
/// closes on stuck threads, so that every cycle mark is a deadlock.
[[nodiscard]] GraphAnalysis analyzeWaitGraph(const Snapshot& snapshot, std::span<const Pid> roots,
                                             const GraphOptions& options);

}  // namespace wctmon
