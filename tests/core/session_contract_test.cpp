// The session contract on the fake the core's tests use: its results are made on the test's own
// thread (within the call, or when the test releases held samples), so they are always posted.
#include "contract/wait_chain_session_contract.h"
#include "fakes/fake_wait_chain_source.h"

namespace wctmon::testing {
namespace {

class FakeSessionHarness {
 public:
  static constexpr bool kResultsFromWork = false;
  static constexpr bool kCancelLeavesWorkBehind = true;

  FakeSessionHarness() {
    Snapshot snapshot;
    ProcessSample process;
    process.pid = kPid;
    process.name = "subject";
    for (int tid : {101, 102}) {
      ThreadSample t;
      t.id = ThreadRef{kPid, Tid{tid}};
      t.status = ObjectStatus::kBlocked;
      process.threads.push_back(t);
    }
    snapshot.processes.push_back(process);
    live_.setSample(snapshot);
    live_.queueResample(snapshot);
    exited_.setSample(makeError(ErrorCode::kNoSuchProcess, "no such process"));
  }

  std::unique_ptr<WaitChainSession> openLive() { return std::move(live_.open(kPid)).value(); }
  Pid livePid() { return kPid; }
  std::unique_ptr<WaitChainSession> openExited() {
    return std::move(exited_.open(Pid{kPid.value + 1})).value();
  }
  void holdWork() { live_.holdSamples(); }
  void releaseWork() { live_.release(); }

 private:
  static constexpr Pid kPid{4242};
  FakeWaitChainSource live_;
  FakeWaitChainSource exited_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(FakeSessionContract, WaitChainSessionContract, FakeSessionHarness);

}  // namespace
}  // namespace wctmon::testing
