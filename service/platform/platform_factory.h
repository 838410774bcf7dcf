#pragma once

#include <memory>

#include "core/executor.h"
#include "core/ports/dump_reader.h"
#include "core/ports/process_dumper.h"
#include "core/ports/thread_inspector.h"
#include "core/ports/wait_chain_source.h"

namespace wctmon {

/// The wait-chain source of the platform this binary was built for; what a sample does on the
/// platform runs on `work` (the service's pool, the one-shot command's loop).
[[nodiscard]] std::unique_ptr<WaitChainSource> makeWaitChainSource(Executor work);

/// The thread inspector of the platform this binary was built for.
[[nodiscard]] std::unique_ptr<ThreadInspector> makeThreadInspector();

/// The process dumper of the platform this binary was built for.
[[nodiscard]] std::unique_ptr<ProcessDumper> makeProcessDumper();

/// The dump reader of the platform this binary was built for: the dumps its dumper writes.
[[nodiscard]] std::unique_ptr<DumpReader> makeDumpReader();

}  // namespace wctmon
