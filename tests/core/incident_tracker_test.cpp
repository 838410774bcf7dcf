#include "core/incident_tracker.h"

#include <gtest/gtest.h>

#include "core/snapshot_builder.h"
#include "core/wait_graph.h"
#include "fakes/fake_clock.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::SnapshotBuilder;
using testing::T;
using Type = IncidentEvent::Type;

const ProcessIdentity kProcess{Pid{10}, 777};

/// An observation built the way the service builds one: from a snapshot through the graph.
ProcessObservation observe(const Snapshot& s, ProcessIdentity process = kProcess) {
  ProcessObservation o;
  o.process = process;
  o.process_name = "server";
  o.target = "servers";
  o.hang_threshold = 30s;
  o.ignore_waits = {ObjectType::kFutex, ObjectType::kPoll};
  o.threads = s.processes.front().threads;
  const std::vector<Pid> roots{process.pid};
  auto g = analyzeWaitGraph(s, roots, {});
  o.deadlocks = std::move(g.deadlocks);
  o.chains = std::move(g.chains);
  return o;
}

Snapshot abba() { return testing::abbaSnapshot(); }

Snapshot healthy() {
  return SnapshotBuilder().process(10, "server").running(11).running(12).ownerless(13).build();
}

std::vector<Type> types(const std::vector<IncidentEvent>& events) {
  std::vector<Type> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

TEST(IncidentTracker, OneDeadlockIsOneIncidentFromOpenToResolve) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  auto events = tracker.observe(observe(abba()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  const auto opened = events[0].incident;
  EXPECT_EQ(opened.kind, IncidentKind::kDeadlock);
  EXPECT_EQ(opened.state, IncidentState::kOpen);
  EXPECT_EQ(opened.process, kProcess);
  EXPECT_EQ(opened.threads, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  EXPECT_EQ(opened.opened_at, clock.now());
  EXPECT_EQ(opened.chains.size(), 2U);
  EXPECT_EQ(opened.target, "servers");
  EXPECT_EQ(opened.summary, "deadlock of 2 thread(s) in server (pid 10): [10:11] t11, [10:12] t12");

  for (int i = 0; i < 100; ++i) {
    clock.advance(1s);
    EXPECT_TRUE(tracker.observe(observe(abba())).empty()) << i;
  }
  EXPECT_EQ(tracker.openIncidents().size(), 1U);

  clock.advance(1s);
  events = tracker.observe(observe(healthy()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.state, IncidentState::kResolved);
  EXPECT_EQ(events[0].incident.resolved_at, clock.now());
  EXPECT_EQ(events[0].incident.opened_at, opened.opened_at);
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
  EXPECT_TRUE(tracker.openIncidents().empty());
}

TEST(IncidentTracker, MoreThreadsPilingUpBehindADeadlockUpdateIt) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  (void)tracker.observe(observe(abba()));
  auto more = SnapshotBuilder()
                  .process(10, "server")
                  .waitsOnThread(11, T(10, 12))
                  .waitsOnThread(12, T(10, 11))
                  .waitsOnThread(13, T(10, 11))
                  .build();
  clock.advance(1s);
  const auto events = tracker.observe(observe(more));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});
  EXPECT_EQ(events[0].incident.spurs, std::vector<ThreadRef>{T(10, 13)});
  EXPECT_EQ(events[0].incident.updated_at, clock.now());
}

TEST(IncidentTracker, ProcessExitResolvesItsIncidents) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  (void)tracker.observe(observe(abba()));
  clock.advance(5s);
  const auto events = tracker.forget(kProcess, "the process exited");
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the process exited");
  EXPECT_TRUE(tracker.trackedProcesses().empty());
  EXPECT_TRUE(tracker.forget(kProcess, "again").empty());
}

Snapshot blockedOnMutex(std::uint64_t switches, int owner = 99) {
  return SnapshotBuilder()
      .process(10, "server")
      .waitsOnThread(11, T(10, owner))
      .switches(switches)
      .running(owner)
      .build();
}

TEST(IncidentTracker, AThreadInTheSameWaitPastTheThresholdIsAHang) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(29s);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  EXPECT_EQ(tracker.waitTime(kProcess, Tid{11}), std::chrono::milliseconds(29s));
  clock.advance(1s);
  auto events = tracker.observe(observe(blockedOnMutex(7)));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  const auto& hang = events[0].incident;
  EXPECT_EQ(hang.kind, IncidentKind::kHang);
  EXPECT_EQ(hang.threads, std::vector<ThreadRef>{T(10, 11)});
  EXPECT_EQ(hang.summary, "thread [10:11] t11 in server (pid 10) blocked for 30 s on Mutex m99");
  ASSERT_EQ(hang.chains.size(), 1U);
  EXPECT_EQ(hang.chains[0].nodes[0].wait_time, std::chrono::milliseconds(30s));

  clock.advance(10s);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  // It ran: the wait it is in now is a new one.
  clock.advance(1s);
  events = tracker.observe(observe(blockedOnMutex(8)));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the thread moved on");
}

TEST(IncidentTracker, ProgressRestartsTheHangClock) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  for (std::uint64_t i = 0; i < 60; ++i) {
    EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(i))).empty()) << i;
    clock.advance(1s);
  }
}

TEST(IncidentTracker, IgnoredWaitsAreNeverHangs) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  const auto idle = SnapshotBuilder().process(10, "server").ownerless(11).switches(3).build();
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(tracker.observe(observe(idle)).empty());
    clock.advance(1s);
  }
  EXPECT_EQ(tracker.waitTime(kProcess, Tid{11}), std::chrono::milliseconds(100s));
}

TEST(IncidentTracker, DeadlockedThreadsAndTheirSpursAreNotAlsoHangs) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  const auto s = SnapshotBuilder()
                     .process(10, "server")
                     .waitsOnThread(11, T(10, 12))
                     .switches(1)
                     .waitsOnThread(12, T(10, 11))
                     .switches(1)
                     .waitsOnThread(13, T(10, 11))
                     .switches(1)
                     .build();
  EXPECT_EQ(types(tracker.observe(observe(s))), std::vector<Type>{Type::kOpened});
  for (int i = 0; i < 60; ++i) {
    clock.advance(1s);
    EXPECT_TRUE(tracker.observe(observe(s)).empty()) << i;
  }
}

TEST(IncidentTracker, PidReuseIsADifferentProcess) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  (void)tracker.observe(observe(abba()));
  const ProcessIdentity reused{Pid{10}, 999};
  const auto events = tracker.observe(observe(abba(), reused));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  EXPECT_EQ(events[0].incident.process, reused);
  EXPECT_EQ(tracker.openIncidents().size(), 2U);
}

TEST(IncidentTracker, AdoptedIncidentsContinueOrResolve) {
  FakeClock clock;
  Incident stored;
  {
    IncidentTracker before(clock);
    stored = before.observe(observe(abba()))[0].incident;
    stored.id = 41;
  }
  clock.advance(60s);
  IncidentTracker after(clock);
  after.adopt({stored});
  EXPECT_TRUE(after.observe(observe(abba())).empty());
  ASSERT_EQ(after.openIncidents().size(), 1U);
  EXPECT_EQ(after.openIncidents()[0].id, 41);
  const auto events = after.observe(observe(healthy()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.id, 41);
}

TEST(IncidentTracker, AnAdoptedHangContinuesUntilTheThreadRuns) {
  FakeClock clock;
  Incident stored;
  {
    IncidentTracker before(clock);
    (void)before.observe(observe(blockedOnMutex(7)));
    clock.advance(30s);
    stored = before.observe(observe(blockedOnMutex(7)))[0].incident;
  }
  IncidentTracker after(clock);
  after.adopt({stored});
  clock.advance(1s);
  EXPECT_TRUE(after.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(1s);
  EXPECT_TRUE(after.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(1s);
  EXPECT_EQ(types(after.observe(observe(blockedOnMutex(9)))), std::vector<Type>{Type::kResolved});
}

TEST(IncidentTracker, AssignedIdsTravelWithTheIncident) {
  FakeClock clock;
  IncidentTracker tracker(clock);
  const auto opened = tracker.observe(observe(abba()))[0].incident;
  tracker.assignId(kProcess, opened.signature, 7);
  const auto events = tracker.forget(kProcess, "gone");
  EXPECT_EQ(events[0].incident.id, 7);
}

}  // namespace
}  // namespace wctmon
