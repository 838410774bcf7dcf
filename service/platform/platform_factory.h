#pragma once

#include <memory>

#include "platform/thread_inspector.h"
#include "platform/wait_chain_source.h"

namespace wctmon {

/// The wait-chain source of the platform this binary was built for.
[[nodiscard]] std::unique_ptr<WaitChainSource> makeWaitChainSource();

/// The thread inspector of the platform this binary was built for.
[[nodiscard]] std::unique_ptr<ThreadInspector> makeThreadInspector();

}  // namespace wctmon
