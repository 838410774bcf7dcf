#pragma once

#include <memory>

#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"

namespace wctmon {

/// The wait-chain source of the platform this binary was built for.
[[nodiscard]] std::unique_ptr<WaitChainSource> makeWaitChainSource();

/// The thread inspector of the platform this binary was built for.
[[nodiscard]] std::unique_ptr<ThreadInspector> makeThreadInspector();

}  // namespace wctmon
