#include "platform/platform_factory.h"
#include "platform/windows/minidump_writer.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/wct_api.h"
#include "platform/windows/wct_wait_chain_source.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon {

std::unique_ptr<WaitChainSource> makeWaitChainSource(Executor work) {
  return std::make_unique<windows_platform::WctWaitChainSource>(
      std::move(work), windows_platform::makeSystemWctApi(), windows_platform::listProcessThreads);
}

std::unique_ptr<ThreadInspector> makeThreadInspector() {
  return std::make_unique<windows_platform::WindowsThreadInspector>();
}

std::unique_ptr<ProcessDumper> makeProcessDumper() {
  return std::make_unique<windows_platform::MinidumpWriter>();
}

}  // namespace wctmon
