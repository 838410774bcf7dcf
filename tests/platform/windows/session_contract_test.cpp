// The session contract on the WCT source, with WCT scripted at its API boundary: its answers come
// on the script's own thread, and a held request stays pending until released or until its WCT
// session is closed.
#include "contract/wait_chain_session_contract.h"
#include "platform/windows/scripted_wct.h"
#include "platform/windows/wct_wait_chain_source.h"
#include "support/thread_executor.h"

namespace wctmon::testing {
namespace {

using namespace windows_platform::scripted;

class WctSessionHarness {
 public:
  static constexpr bool kResultsFromWork = true;
  /// Cancelling closes the WCT session, which itself ends the pending requests.
  static constexpr bool kCancelLeavesWorkBehind = false;

  WctSessionHarness() { scriptAbba(*wct_); }

  std::unique_ptr<WaitChainSession> openLive() {
    return std::move(source_.open(livePid())).value();
  }
  Pid livePid() { return Pid{static_cast<std::int32_t>(kPid)}; }
  /// The thread lister finds no such process, as Toolhelp32 does for one that exited.
  std::unique_ptr<WaitChainSession> openExited() {
    return std::move(source_.open(Pid{static_cast<std::int32_t>(kPid) + 1})).value();
  }
  void holdWork() { wct_->answer(13, held(true)); }
  void releaseWork() {
    // Requests made from now on are answered at once; those made before are let go.
    wct_->answer(13, held(false));
    wct_->release();
  }

 private:
  static Answer held(bool hold) {
    return Answer{.nodes = {threadNode(kPid, 13, WctStatusRunning)}, .hold = hold};
  }

  ThreadExecutor work_;
  std::shared_ptr<ScriptedWct> wct_ = std::make_shared<ScriptedWct>();
  windows_platform::WctWaitChainSource source_{
      work_.executor(), wct_, [](Pid pid) -> Result<windows_platform::ProcessThreads> {
        if (pid.value != static_cast<std::int32_t>(kPid)) {
          return makeError(ErrorCode::kNoSuchProcess, "no such process");
        }
        return process({11, 12, 13});
      }};
};

INSTANTIATE_TYPED_TEST_SUITE_P(WctSessionContract, WaitChainSessionContract, WctSessionHarness);

}  // namespace
}  // namespace wctmon::testing
