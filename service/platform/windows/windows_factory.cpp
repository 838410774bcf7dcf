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

namespace {

/// A minidump holds no wait chains for WCT to traverse: post-mortem analysis is the Linux
/// engine's (ELF cores) for now.
class NoDumpReader final : public DumpReader {
 public:
  [[nodiscard]] Result<Snapshot> read(const DumpToRead& what) override {
    return makeError(ErrorCode::kUnsupported,
                     "cannot analyse " + what.dump.string() +
                         ": analysing a dump needs the Linux engine (ELF cores); on Windows, "
                         "open a minidump in WinDbg (!analyze -hang, !locks)");
  }
};

}  // namespace

std::unique_ptr<DumpReader> makeDumpReader() { return std::make_unique<NoDumpReader>(); }

}  // namespace wctmon
