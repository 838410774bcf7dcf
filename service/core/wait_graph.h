#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/snapshot.h"
#include "core/wait_model.h"

namespace wctmon {

/// The default node limit of a chain (WCT's own cap is 16).
inline constexpr std::uint32_t kDefaultMaxNodes = 64;

/// How chains are built from a snapshot.
struct GraphOptions {
  std::uint32_t max_nodes = kDefaultMaxNodes;
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
/// object and every thread that could release it is stuck too; the cycles among stuck threads are
/// the deadlocks, and stuck threads outside the cycles are their spurs.
[[nodiscard]] GraphAnalysis analyzeWaitGraph(const Snapshot& snapshot, std::span<const Pid> roots,
                                             const GraphOptions& options);

}  // namespace wctmon
