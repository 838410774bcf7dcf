// The SCM side of the service without an SCM: what each state and control reports through
// SetServiceStatus (recorded here), the checkpoints of the pending states, and what each
// control asks of the service.
#include <gtest/gtest.h>

#include <vector>

#include "platform/windows/scm_service.h"

namespace wctmon::windows_platform {
namespace {

class ScmStatusTest : public ::testing::Test {
 protected:
  std::vector<SERVICE_STATUS> reported;
  ScmStatus status{[this](const SERVICE_STATUS& s) { reported.push_back(s); }};

  [[nodiscard]] const SERVICE_STATUS& last() const { return reported.back(); }

  void startAndRun() {
    status.startPending();
    status.running();
    reported.clear();
  }
};

constexpr DWORD kRunningControls = SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN |
                                   SERVICE_ACCEPT_PRESHUTDOWN | SERVICE_ACCEPT_PARAMCHANGE;

TEST_F(ScmStatusTest, AStartIsPendingWithGrowingCheckpointsThenRunningWithItsControls) {
  status.startPending();
  ASSERT_EQ(reported.size(), 1U);
  EXPECT_EQ(last().dwServiceType, static_cast<DWORD>(SERVICE_WIN32_OWN_PROCESS));
  EXPECT_EQ(last().dwCurrentState, static_cast<DWORD>(SERVICE_START_PENDING));
  EXPECT_EQ(last().dwControlsAccepted, 0U);  // nothing until it runs
  EXPECT_EQ(last().dwCheckPoint, 1U);
  EXPECT_EQ(last().dwWaitHint, static_cast<DWORD>(kStartWaitHint.count()));

  status.progress();
  status.progress();
  ASSERT_EQ(reported.size(), 3U);
  EXPECT_EQ(reported[1].dwCheckPoint, 2U);
  EXPECT_EQ(reported[2].dwCheckPoint, 3U);
  EXPECT_EQ(reported[2].dwWaitHint, static_cast<DWORD>(kStartWaitHint.count()));

  status.running();
  EXPECT_EQ(last().dwCurrentState, static_cast<DWORD>(SERVICE_RUNNING));
  EXPECT_EQ(last().dwControlsAccepted, kRunningControls);
  EXPECT_EQ(last().dwCheckPoint, 0U);
  EXPECT_EQ(last().dwWaitHint, 0U);

  const auto count = reported.size();
  status.progress();  // running: nothing pending to move
  status.running();   // a reload's readiness: already running
  EXPECT_EQ(reported.size(), count);
}

TEST_F(ScmStatusTest, StopIsPendingAtOnceThenStoppedWithExitCodeZero) {
  startAndRun();
  const auto d = decideControl(status, SERVICE_CONTROL_STOP);
  EXPECT_EQ(d.request, ControlRequest::kStop);
  EXPECT_EQ(d.result, static_cast<DWORD>(NO_ERROR));
  EXPECT_EQ(d.reason, "the service control manager asked it to stop");
  // The handler leaves STOP_PENDING reported: the SCM reads it when the handler returns.
  ASSERT_EQ(reported.size(), 1U);
  EXPECT_EQ(last().dwCurrentState, static_cast<DWORD>(SERVICE_STOP_PENDING));
  EXPECT_EQ(last().dwControlsAccepted, 0U);
  EXPECT_EQ(last().dwCheckPoint, 1U);
  EXPECT_EQ(last().dwWaitHint, static_cast<DWORD>(kStopWaitHint.count()));

  status.progress();
  EXPECT_EQ(last().dwCheckPoint, 2U);
  status.stopPending();  // the service's own stopping(): already pending, nothing new
  status.running();      // a late readiness cannot bring it back
  EXPECT_EQ(reported.size(), 2U);

  // A second stop while stopping is answered by the stop under way.
  const auto again = decideControl(status, SERVICE_CONTROL_STOP);
  EXPECT_EQ(again.request, ControlRequest::kNone);
  EXPECT_EQ(again.result, static_cast<DWORD>(NO_ERROR));

  status.stopped();
  EXPECT_EQ(last().dwCurrentState, static_cast<DWORD>(SERVICE_STOPPED));
  EXPECT_EQ(last().dwWin32ExitCode, static_cast<DWORD>(NO_ERROR));
  EXPECT_EQ(last().dwServiceSpecificExitCode, 0U);
  EXPECT_EQ(last().dwCheckPoint, 0U);
}

TEST_F(ScmStatusTest, PreshutdownAndShutdownStopTheServiceAsTheSystemGoesDown) {
  for (const DWORD control : {static_cast<DWORD>(SERVICE_CONTROL_PRESHUTDOWN),
                              static_cast<DWORD>(SERVICE_CONTROL_SHUTDOWN)}) {
    ScmStatus s([](const SERVICE_STATUS&) {});
    s.startPending();
    s.running();
    const auto d = decideControl(s, control);
    EXPECT_EQ(d.request, ControlRequest::kStop) << control;
    EXPECT_EQ(d.reason, "the system is shutting down");
    EXPECT_EQ(s.current().dwCurrentState, static_cast<DWORD>(SERVICE_STOP_PENDING));
  }
  // The stop fits in the preshutdown timeout that --configure-service sets.
  EXPECT_LT(kStopWaitHint, kPreshutdownTimeout);
}

TEST_F(ScmStatusTest, ParamchangeReloadsOnlyARunningService) {
  status.startPending();
  auto d = decideControl(status, SERVICE_CONTROL_PARAMCHANGE);
  EXPECT_EQ(d.request, ControlRequest::kNone);
  EXPECT_EQ(d.result, static_cast<DWORD>(ERROR_SERVICE_CANNOT_ACCEPT_CTRL));

  status.running();
  d = decideControl(status, SERVICE_CONTROL_PARAMCHANGE);
  EXPECT_EQ(d.request, ControlRequest::kReload);
  EXPECT_EQ(d.result, static_cast<DWORD>(NO_ERROR));
  EXPECT_EQ(status.current().dwCurrentState, static_cast<DWORD>(SERVICE_RUNNING));

  (void)decideControl(status, SERVICE_CONTROL_STOP);
  d = decideControl(status, SERVICE_CONTROL_PARAMCHANGE);
  EXPECT_EQ(d.request, ControlRequest::kNone);
  EXPECT_EQ(d.result, static_cast<DWORD>(ERROR_SERVICE_CANNOT_ACCEPT_CTRL));
}

TEST_F(ScmStatusTest, InterrogateReportsTheSameStatusAgainAndOtherControlsAreRefused) {
  startAndRun();
  auto d = decideControl(status, SERVICE_CONTROL_INTERROGATE);
  EXPECT_EQ(d.request, ControlRequest::kNone);
  EXPECT_EQ(d.result, static_cast<DWORD>(NO_ERROR));
  ASSERT_EQ(reported.size(), 1U);
  EXPECT_EQ(last().dwCurrentState, static_cast<DWORD>(SERVICE_RUNNING));

  for (const DWORD control : {static_cast<DWORD>(SERVICE_CONTROL_PAUSE),
                              static_cast<DWORD>(SERVICE_CONTROL_CONTINUE), DWORD{200}}) {
    d = decideControl(status, control);
    EXPECT_EQ(d.request, ControlRequest::kNone) << control;
    EXPECT_EQ(d.result, static_cast<DWORD>(ERROR_CALL_NOT_IMPLEMENTED)) << control;
  }
  EXPECT_EQ(status.current().dwCurrentState, static_cast<DWORD>(SERVICE_RUNNING));
}

TEST_F(ScmStatusTest, AFailureEndsStoppedWithAServiceSpecificExitCode) {
  status.startPending();
  status.stopped(ERROR_SERVICE_SPECIFIC_ERROR, static_cast<DWORD>(ServiceExit::kStartFailed));
  EXPECT_EQ(last().dwCurrentState, static_cast<DWORD>(SERVICE_STOPPED));
  EXPECT_EQ(last().dwWin32ExitCode, static_cast<DWORD>(ERROR_SERVICE_SPECIFIC_ERROR));
  EXPECT_EQ(last().dwServiceSpecificExitCode, 1U);
  // Stopped: a stop control changes nothing.
  const auto d = decideControl(status, SERVICE_CONTROL_STOP);
  EXPECT_EQ(d.request, ControlRequest::kNone);
  EXPECT_EQ(status.current().dwCurrentState, static_cast<DWORD>(SERVICE_STOPPED));
}

}  // namespace
}  // namespace wctmon::windows_platform
