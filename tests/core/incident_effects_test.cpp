// The incident effects on their own: decided changes captured, recorded and alerted in the order
// they came, off the thread that decided them.
#include "core/incident_effects.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/snapshot_builder.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_incident_repository.h"
#include "fakes/fake_platform.h"
#include "fakes/fake_wait_chain_source.h"
#include "support/thread_executor.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::T;

Incident deadlock(std::int64_t id) {
  Incident i;
  i.id = id;
  i.kind = IncidentKind::kDeadlock;
  i.process = ProcessIdentity{Pid{10}, 0};
  i.target = "server";
  i.threads = {T(10, 11), T(10, 12)};
  i.summary = "deadlock " + std::to_string(id);
  return i;
}

IncidentChange change(IncidentEvent::Type type, Incident incident, bool capture = false) {
  if (type == IncidentEvent::Type::kResolved) incident.state = IncidentState::kResolved;
  return IncidentChange{.type = type, .incident = std::move(incident), .capture = capture};
}

class IncidentEffectsTest : public ::testing::Test {
 protected:
  IncidentEffects make(Executor executor = {}) {
    return IncidentEffects({&store_, &inspector_, &alerts_, nullptr, clock_, std::move(executor)},
                           Config{}.alerts);
  }

  testing::FakeClock clock_;
  testing::FakeIncidentRepository store_;
  testing::FakeThreadInspector inspector_;
  testing::FakeAlertSink alerts_;
};

TEST_F(IncidentEffectsTest, AnOpeningIsRecordedThenCapturedAndAlertedWithItsEvidence) {
  auto effects = make();
  std::vector<std::size_t> told;
  auto subscription = effects.feed().subscribe(
      [](const auto&) {}, [&](const auto& e) { told.push_back(e->incident.evidence.size()); });
  effects.push({change(IncidentEvent::Type::kOpened, deadlock(1), /*capture=*/true)});
  // Told without its evidence first (a capture takes a while), then with it.
  EXPECT_EQ(told, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(inspector_.requested, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  EXPECT_EQ(store_.get(1)->value().evidence.size(), 2U);
  ASSERT_EQ(alerts_.sent.size(), 1U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);
  ASSERT_NE(alerts_.sent[0].incident, nullptr);
  EXPECT_EQ(alerts_.sent[0].incident->evidence.size(), 2U);
  const auto open = effects.openIncidents();
  ASSERT_EQ(open->size(), 1U);
  EXPECT_EQ((*open)[0].evidence.size(), 2U) << "status reads are served what was recorded";
  EXPECT_EQ(effects.counters().captures, 1U);
}

// A ring of 5,000 threads was captured whole: nine minutes of stops and unwinds, the service's
// memory past 1.8 GB, nothing else written meanwhile.
TEST_F(IncidentEffectsTest, ThreadsPastTheFirst32OfALargeDeadlockAreNamedNotCaptured) {
  auto effects = make();
  auto ring = deadlock(1);
  ring.threads.clear();
  for (int i = 0; i < 5000; ++i) ring.threads.push_back(T(10, 100 + i));
  effects.push({change(IncidentEvent::Type::kOpened, ring, /*capture=*/true)});
  ASSERT_EQ(inspector_.requested.size(), kMaxCapturedThreads);
  EXPECT_EQ(inspector_.requested.back(), T(10, 100 + static_cast<int>(kMaxCapturedThreads) - 1));
  const auto stored = store_.get(1)->value();
  ASSERT_EQ(stored.evidence.size(), 5000U);
  EXPECT_TRUE(stored.evidence[kMaxCapturedThreads - 1].captured);
  EXPECT_FALSE(stored.evidence[kMaxCapturedThreads].captured);
  EXPECT_EQ(stored.evidence[4999].thread, T(10, 5099));
  EXPECT_EQ(stored.evidence[4999].error,
            "not captured: the evidence is taken from the first 32 threads");
  // Not a failed capture: the threads it took were taken.
  ASSERT_EQ(alerts_.sent.size(), 1U);
}

TEST_F(IncidentEffectsTest, AProcessIsDisturbedFromTheDecisionToCaptureUntilTheCaptureEnds) {
  std::vector<Task> tasks;
  auto effects = make([&](Task t) { tasks.push_back(std::move(t)); });
  const auto before = clock_.steadyNow();
  EXPECT_TRUE(effects.disturbedSince(before).empty());
  auto cross = deadlock(1);
  cross.threads = {T(10, 11), T(20, 21)};
  effects.push({change(IncidentEvent::Type::kOpened, cross, /*capture=*/true)});
  // Queued, not yet taken: a sample now may already race the capture.
  EXPECT_EQ(effects.disturbedSince(before), (std::set<Pid>{Pid{10}, Pid{20}}));
  clock_.advance(std::chrono::seconds(3));
  // Recorded, then captured on the evidence lane, then recorded with it.
  while (!tasks.empty()) {
    auto task = std::move(tasks.front());
    tasks.erase(tasks.begin());
    task();
  }
  ASSERT_EQ(inspector_.requested.size(), 2U);
  EXPECT_EQ(store_.get(1)->value().evidence.size(), 2U);
  // A sample begun before the capture ended may have seen its threads stopped; one begun after
  // has not.
  EXPECT_EQ(effects.disturbedSince(before), (std::set<Pid>{Pid{10}, Pid{20}}));
  clock_.advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(effects.disturbedSince(clock_.steadyNow()).empty());
  // Without a capture or a dump, nothing is disturbed; nor by a dump where none are taken.
  effects.push({change(IncidentEvent::Type::kOpened, deadlock(2), /*capture=*/false)});
  EXPECT_TRUE(effects.disturbedSince(clock_.steadyNow()).empty());
  auto dumping = change(IncidentEvent::Type::kOpened, deadlock(3));
  dumping.dump = true;
  effects.push({dumping});
  EXPECT_TRUE(effects.disturbedSince(clock_.steadyNow()).empty());
}

TEST_F(IncidentEffectsTest, ACaptureThatTookNothingIsAlertedToo) {
  inspector_.fail_with = "ptrace: Operation not permitted";
  auto effects = make();
  effects.push({change(IncidentEvent::Type::kOpened, deadlock(1), /*capture=*/true)});
  ASSERT_EQ(alerts_.sent.size(), 2U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);
  EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kCaptureFailed);
}

TEST_F(IncidentEffectsTest,
       ChangesOfAnIncidentAreDoneInTheOrderDecidedAndOthersDoNotWaitForItsCapture) {
  testing::ThreadExecutor thread;
  thread.hold();
  auto effects = make(thread.executor());
  effects.push({change(IncidentEvent::Type::kOpened, deadlock(1), /*capture=*/true)});
  effects.push({change(IncidentEvent::Type::kOpened, deadlock(2)),
                change(IncidentEvent::Type::kResolved, deadlock(1))});
  effects.push({change(IncidentEvent::Type::kUpdated, deadlock(2))});
  // Queued, not done: whoever decided them does not wait.
  EXPECT_EQ(effects.counters().pending, 4U);
  EXPECT_FALSE(store_.get(1)->has_value());
  EXPECT_TRUE(effects.openIncidents()->empty());

  std::vector<std::pair<IncidentEvent::Type, std::int64_t>> told;
  auto subscription = effects.feed().subscribe(
      [](const auto&) {}, [&](const auto& e) { told.emplace_back(e->type, e->incident.id); });
  thread.release();
  for (int i = 0; i < 500 && effects.counters().pending > 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(effects.counters().pending, 0U);
  using Type = IncidentEvent::Type;
  // Incident 1 is recorded, then its evidence taken beside the recording: incident 2's changes
  // go on meanwhile, and incident 1's resolution waits for its evidence.
  EXPECT_EQ(told, (std::vector<std::pair<Type, std::int64_t>>{{Type::kOpened, 1},
                                                              {Type::kOpened, 2},
                                                              {Type::kUpdated, 2},
                                                              {Type::kUpdated, 1},
                                                              {Type::kResolved, 1}}));
  // Resolved with the evidence its capture took before.
  EXPECT_EQ(store_.get(1)->value().state, IncidentState::kResolved);
  EXPECT_EQ(store_.get(1)->value().evidence.size(), 2U);
  EXPECT_TRUE(store_.get(2)->value().evidence.empty()) << "evidence stays with its incident";
  ASSERT_EQ(effects.openIncidents()->size(), 1U);
  EXPECT_EQ(effects.openIncidents()->front().id, 2);
}

TEST_F(IncidentEffectsTest, TheIncidentsOpenInTheStoreAreOpenAgainAtAStart) {
  auto stored = deadlock(7);
  stored.evidence.resize(1);
  ASSERT_TRUE(store_.insert(stored).ok());
  auto effects = make();
  EXPECT_EQ(effects.lastRecordedId(), 7);
  const auto open = effects.reopenStored();
  ASSERT_EQ(open.size(), 1U);
  ASSERT_EQ(effects.openIncidents()->size(), 1U);
  // A change decided from the tracker's copy keeps what was recorded.
  effects.push({change(IncidentEvent::Type::kResolved, deadlock(7))});
  EXPECT_EQ(store_.get(7)->value().evidence.size(), 1U);
  EXPECT_TRUE(effects.openIncidents()->empty());
  // Its opening was alerted by the run before: its resolution is alerted now.
  ASSERT_EQ(alerts_.sent.size(), 1U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kIncidentResolved);
}

TEST_F(IncidentEffectsTest, AResolutionIsAlertedExactlyWhenItsOpeningWas) {
  Config::Alerts limits;
  limits.max_per_window = 1;
  IncidentEffects effects({&store_, &inspector_, &alerts_, nullptr, clock_, {}}, limits);
  // The second opening of the target's window is held back: so is its resolution, whatever
  // the rate by then; the first one's resolution goes although the window is full.
  effects.push({change(IncidentEvent::Type::kOpened, deadlock(1)),
                change(IncidentEvent::Type::kOpened, deadlock(2)),
                change(IncidentEvent::Type::kResolved, deadlock(2)),
                change(IncidentEvent::Type::kResolved, deadlock(1))});
  ASSERT_EQ(alerts_.sent.size(), 2U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);
  EXPECT_EQ(alerts_.sent[0].incident->id, 1);
  EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kIncidentResolved);
  EXPECT_EQ(alerts_.sent[1].incident->id, 1);
  EXPECT_EQ(effects.counters().alerts_suppressed, 1U);
}

}  // namespace
}  // namespace wctmon
