#pragma once

#include <memory>

#include "core/ports/wait_chain_source.h"
#include "model/snapshot.h"

namespace wctmon {

/// A session over one moment read once (a dump): every sample is that snapshot, and every
/// re-read finds each thread as it was, so the analyzer confirms a cycle of it as read. The
/// platform cannot say how long a thread of it had waited.
[[nodiscard]] std::unique_ptr<WaitChainSession> makeFrozenSession(Snapshot snapshot);

}  // namespace wctmon
