#include "core/pending_service_tracker.h"

#include <gtest/gtest.h>

#include <vector>

#include "fakes/fake_clock.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

ServiceReading reading(std::string name, ServiceState state, std::uint32_t checkpoint,
                       std::chrono::milliseconds hint, std::int32_t pid = 400) {
  ServiceReading r;
  r.name = std::move(name);
  r.display_name = r.name + " Service";
  r.pid = Pid{pid};
  r.state = state;
  r.checkpoint = checkpoint;
  r.wait_hint = hint;
  return r;
}

PendingServiceRules every() {
  PendingServiceRules rules;
  rules.all = true;
  return rules;
}

class PendingServiceTrackerTest : public ::testing::Test {
 protected:
  FakeClock clock;
  PendingServiceTracker tracker{clock};

  std::vector<Symptom> feed(const std::vector<ServiceReading>& readings,
                            const PendingServiceRules& rules = every()) {
    return tracker.update(readings, rules);
  }
};

TEST_F(PendingServiceTrackerTest, AStuckCheckpointIsHungOncePastItsHintAndStaysSo) {
  const auto stuck = reading("Spooler", ServiceState::kStartPending, 1, 2000ms);
  EXPECT_TRUE(feed({stuck}).empty());
  clock.advance(2000ms);
  EXPECT_TRUE(feed({stuck}).empty()) << "at the hint, not past it";
  clock.advance(1ms);
  auto symptoms = feed({stuck});
  ASSERT_EQ(symptoms.size(), 1U);
  const Symptom& s = symptoms.front();
  EXPECT_EQ(s.kind, IncidentKind::kServiceHung);
  EXPECT_EQ(s.pid, Pid{400});
  EXPECT_EQ(s.target, "services");
  EXPECT_EQ(s.key, "service Spooler");
  EXPECT_TRUE(s.threads.empty());
  EXPECT_EQ(s.summary,
            "service Spooler (Spooler Service) has been START_PENDING at checkpoint 1 for 2s, "
            "past its wait hint of 2s");
  // Level-triggered: the same symptom every call while it holds, with how long so far.
  clock.advance(10s);
  symptoms = feed({stuck});
  ASSERT_EQ(symptoms.size(), 1U);
  EXPECT_EQ(symptoms.front().key, "service Spooler");
  EXPECT_NE(symptoms.front().summary.find("for 12s"), std::string::npos)
      << symptoms.front().summary;
}

TEST_F(PendingServiceTrackerTest, AMovingCheckpointRestartsTheWait) {
  for (std::uint32_t checkpoint = 1; checkpoint <= 10; ++checkpoint) {
    EXPECT_TRUE(feed({reading("Slow", ServiceState::kStartPending, checkpoint, 1000ms)}).empty())
        << checkpoint;
    clock.advance(900ms);  // each step within the hint, ten hints in all
  }
  // Then it stops moving.
  const auto stuck = reading("Slow", ServiceState::kStartPending, 10, 1000ms);
  clock.advance(200ms);
  EXPECT_EQ(feed({stuck}).size(), 1U);
  // And moves again: no longer hung.
  EXPECT_TRUE(feed({reading("Slow", ServiceState::kStartPending, 11, 1000ms)}).empty());
}

TEST_F(PendingServiceTrackerTest, AChangeOfStateOrProcessIsProgressToo) {
  EXPECT_TRUE(feed({reading("Svc", ServiceState::kStopPending, 1, 1000ms)}).empty());
  clock.advance(900ms);
  // Same checkpoint, another pending state: a new step.
  EXPECT_TRUE(feed({reading("Svc", ServiceState::kStartPending, 1, 1000ms)}).empty());
  clock.advance(900ms);
  // Restarted in another process.
  EXPECT_TRUE(feed({reading("Svc", ServiceState::kStartPending, 1, 1000ms, 500)}).empty());
  clock.advance(1001ms);
  const auto symptoms = feed({reading("Svc", ServiceState::kStartPending, 1, 1000ms, 500)});
  ASSERT_EQ(symptoms.size(), 1U);
  EXPECT_EQ(symptoms.front().pid, Pid{500});
}

TEST_F(PendingServiceTrackerTest, AZeroHintIsAllowedTheNoHintWait) {
  const auto bare = reading("Bare", ServiceState::kStartPending, 0, 0ms);
  EXPECT_TRUE(feed({bare}).empty());
  clock.advance(PendingServiceRules::kNoHintWait);
  EXPECT_TRUE(feed({bare}).empty()) << "a hint of 0 is not \"at once\"";
  clock.advance(1ms);
  auto symptoms = feed({bare});
  ASSERT_EQ(symptoms.size(), 1U);
  EXPECT_EQ(symptoms.front().summary,
            "service Bare (Bare Service) has been START_PENDING at checkpoint 0 for 30s with no "
            "wait hint (allowed 30s)");
  // The wait is the rules': a shorter one applies at once, to the wait already counted.
  PendingServiceTracker fresh(clock);
  PendingServiceRules quick = every();
  quick.no_hint_wait = 5s;
  EXPECT_TRUE(fresh.update(std::vector{bare}, quick).empty());
  clock.advance(5001ms);
  EXPECT_EQ(fresh.update(std::vector{bare}, quick).size(), 1U);
}

TEST_F(PendingServiceTrackerTest, AServiceThatLeavesPendingIsNoLongerHungAndStartsAfreshLater) {
  const auto stuck = reading("Svc", ServiceState::kStartPending, 1, 500ms);
  (void)feed({stuck});
  clock.advance(600ms);
  ASSERT_EQ(feed({stuck}).size(), 1U);
  EXPECT_TRUE(feed({reading("Svc", ServiceState::kRunning, 0, 0ms)}).empty());
  // Pending again later with the same checkpoint: a new wait, not the old one's.
  clock.advance(1h);
  EXPECT_TRUE(feed({reading("Svc", ServiceState::kStopPending, 1, 500ms)}).empty());
  EXPECT_TRUE(feed({reading("Svc", ServiceState::kStopped, 0, 0ms, 0)}).empty());
}

TEST_F(PendingServiceTrackerTest, EveryPendingStateCountsAndNoSettledStateDoes) {
  std::vector<ServiceReading> readings;
  for (const auto state :
       {ServiceState::kStopped, ServiceState::kStartPending, ServiceState::kStopPending,
        ServiceState::kRunning, ServiceState::kContinuePending, ServiceState::kPausePending,
        ServiceState::kPaused}) {
    readings.push_back(reading(toString(state), state, 3, 100ms));
  }
  (void)feed(readings);
  clock.advance(1s);
  std::vector<std::string> keys;
  for (const auto& s : feed(readings)) keys.push_back(s.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"service START_PENDING", "service STOP_PENDING",
                                            "service CONTINUE_PENDING", "service PAUSE_PENDING"}));
}

TEST_F(PendingServiceTrackerTest, OnlySelectedServicesCountMatchedWithoutRegardToCase) {
  const std::vector readings{reading("Spooler", ServiceState::kStartPending, 1, 100ms),
                             reading("wuauserv", ServiceState::kStopPending, 1, 100ms)};
  PendingServiceRules rules;
  rules.names = {"SPOOLER", "Other"};
  (void)feed(readings, rules);
  clock.advance(1s);
  auto symptoms = feed(readings, rules);
  ASSERT_EQ(symptoms.size(), 1U);
  EXPECT_EQ(symptoms.front().key, "service Spooler");  // the SCM's spelling, not the config's
  // A service selected later starts its wait then: what it did unselected was not watched.
  rules.names.push_back("WuauServ");
  symptoms = feed(readings, rules);
  ASSERT_EQ(symptoms.size(), 1U);
  clock.advance(101ms);
  EXPECT_EQ(feed(readings, rules).size(), 2U);
  // Nothing selected, nothing reported.
  EXPECT_TRUE(feed(readings, PendingServiceRules{}).empty());
}

TEST_F(PendingServiceTrackerTest, AServiceMissingFromAReadingIsForgotten) {
  const auto stuck = reading("Gone", ServiceState::kStopPending, 2, 100ms);
  (void)feed({stuck});
  clock.advance(1s);
  ASSERT_EQ(feed({stuck}).size(), 1U);
  EXPECT_TRUE(feed({}).empty());
  EXPECT_TRUE(feed({stuck}).empty()) << "deleted and created again: a new wait";
}

}  // namespace
}  // namespace wctmon
