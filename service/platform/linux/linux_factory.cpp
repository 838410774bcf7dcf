#include "platform/linux/core_dump.h"
#include "platform/linux/core_snapshot.h"
#include "platform/linux/linux_wait_chain_source.h"
#include "platform/linux/ptrace_inspector.h"
#include "platform/platform_factory.h"

namespace wctmon {

std::unique_ptr<WaitChainSource> makeWaitChainSource(Executor work) {
  return std::make_unique<linux_platform::LinuxWaitChainSource>(std::move(work));
}

std::unique_ptr<ThreadInspector> makeThreadInspector() {
  return std::make_unique<linux_platform::PtraceInspector>();
}

std::unique_ptr<ProcessDumper> makeProcessDumper() {
  return std::make_unique<linux_platform::CoreDumper>();
}

std::unique_ptr<DumpReader> makeDumpReader() {
  return std::make_unique<linux_platform::CoreReader>();
}

}  // namespace wctmon
