// The session contract on the Linux source, sampling a fixture process that really deadlocks.
// The source's work runs on a worker the harness can hold, as a read stuck in the kernel would.
#include "contract/wait_chain_session_contract.h"
#include "platform/linux/linux_wait_chain_source.h"
#include "support/subprocess.h"
#include "support/thread_executor.h"

namespace wctmon::testing {
namespace {

class LinuxSessionHarness {
 public:
  static constexpr bool kResultsFromWork = true;
  /// A read in progress cannot be abandoned: the session is busy until it ends.
  static constexpr bool kCancelLeavesWorkBehind = true;

  std::unique_ptr<WaitChainSession> openLive() {
    return std::move(source_.open(livePid())).value();
  }
  Pid livePid() { return Pid{subject_.pid()}; }
  std::unique_ptr<WaitChainSession> openExited() {
    FixtureProcess gone("idle");
    const Pid pid{gone.pid()};
    gone.kill();  // and reaped: nothing is left under its pid
    return std::move(source_.open(pid)).value();
  }
  void holdWork() { worker_.hold(); }
  void releaseWork() { worker_.release(); }

 private:
  FixtureProcess subject_{"mutex-abba"};
  ThreadExecutor worker_;
  linux_platform::LinuxWaitChainSource source_{worker_.executor()};
};

INSTANTIATE_TYPED_TEST_SUITE_P(LinuxSessionContract, WaitChainSessionContract, LinuxSessionHarness);

}  // namespace
}  // namespace wctmon::testing
