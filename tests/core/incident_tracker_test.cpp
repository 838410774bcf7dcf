#include "core/incident_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>

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

/// A target with a 30 s hang threshold.
std::shared_ptr<const TargetConfig> targetOf(std::string name, std::vector<ObjectType> ignore_waits,
                                             bool out_of_proc = false) {
  auto target = std::make_shared<TargetConfig>();
  target->name = std::move(name);
  target->hang_threshold = 30s;
  target->ignore_waits = std::move(ignore_waits);
  target->out_of_proc = out_of_proc;
  return target;
}

/// An observation built the way the service builds one: from a snapshot through the graph.
ProcessObservation observe(const Snapshot& s, ProcessIdentity process = kProcess) {
  ProcessObservation o;
  o.process = process;
  o.process_name = "server";
  o.target = targetOf("servers", {ObjectType::kFutex, ObjectType::kPoll});
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
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
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
  EXPECT_EQ(opened.summary, "deadlock of 2 threads in server (pid 10): [10:11] t11, [10:12] t12");
  EXPECT_EQ(opened.processes, (std::vector<IncidentProcess>{{kProcess, "server"}}));

  for (int i = 0; i < 100; ++i) {
    clock.advance(1s);
    EXPECT_TRUE(tracker.observe(observe(abba())).empty()) << i;
  }
  EXPECT_EQ(tracker.openIncidents().size(), 1U);

  // A cycle is gone when two samples in a row do not show it: a thread of it that runs for a
  // moment (a signal, the ptrace stop of a capture restarts its call) is no resolution.
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(healthy())).empty());
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(abba())).empty());  // still the same incident
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(healthy())).empty());
  clock.advance(1s);
  events = tracker.observe(observe(healthy()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.state, IncidentState::kResolved);
  EXPECT_EQ(events[0].incident.resolved_at, clock.now());
  EXPECT_EQ(events[0].incident.opened_at, opened.opened_at);
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
  EXPECT_TRUE(tracker.openIncidents().empty());
}

// A ring of 5,000 threads was resolved ("the cycle is gone") and opened again as a second
// incident: its capture stops 32 threads in turn over seconds, and samples meanwhile saw a thread
// of it stopped or restarting its wait.
TEST(IncidentTracker, SamplesTakenWhileItsThreadsAreStoppedForEvidenceNeverEndADeadlock) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  ASSERT_EQ(types(tracker.observe(observe(abba()))), std::vector<Type>{Type::kOpened});
  for (int i = 0; i < 5; ++i) {
    clock.advance(1s);
    auto o = observe(healthy());
    o.disturbed = {Pid{10}};
    EXPECT_TRUE(tracker.observe(o).empty()) << i;
  }
  // Another process's evidence is no excuse.
  clock.advance(1s);
  auto other = observe(healthy());
  other.disturbed = {Pid{20}};
  EXPECT_TRUE(tracker.observe(other).empty());
  clock.advance(1s);
  other = observe(healthy());
  other.disturbed = {Pid{20}};
  const auto events = tracker.observe(other);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
}

TEST(IncidentTracker, WaitTimesAreWhatTheSamplesSawOrThePlatformReadNeverAMadeUpZero) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  // First sighting: the samples saw the wait for no time at all; only the platform can tell.
  auto first = observe(abba());
  auto events = tracker.observe(first);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  tracker.annotateWaitTimes(kProcess, first.chains);
  for (const auto& c : first.chains) {
    for (const auto& n : c.nodes) {
      if (n.isThread()) {
        EXPECT_FALSE(n.wait_time.has_value()) << n.thread.tid.value;
      }
    }
  }
  // The platform read 5 s on the node: kept over the samples' 0 s.
  auto read = observe(abba());
  read.chains[0].nodes[0].wait_time = 5s;
  tracker.annotateWaitTimes(kProcess, read.chains);
  EXPECT_EQ(read.chains[0].nodes[0].wait_time, std::chrono::milliseconds(5000));
  // Later the samples have seen it for longer than any reading says: that is the wait.
  clock.advance(8s);
  auto later = observe(abba());
  (void)tracker.observe(later);
  later.chains[0].nodes[0].wait_time = 5s;
  tracker.annotateWaitTimes(kProcess, later.chains);
  EXPECT_EQ(later.chains[0].nodes[0].wait_time, std::chrono::milliseconds(8000));
}

/// abba() with thread 13 waiting on thread 11 too.
TEST(IncidentTracker, SamplesOfOtherProcessesNeverEndADeadlockTheirsMissedOnce) {
  // Many targets, one deadlocked: its sample misses the cycle once (a thread of it restarting
  // its call after the capture's ptrace stop), and before its next sample come two of every
  // other target. They never showed the cycle and cannot tell it is gone (they ended it, and it
  // was opened again as a second incident).
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const ProcessIdentity other{Pid{40}, 888};
  const auto calm = [&] {
    return observe(SnapshotBuilder().process(40, "other").running(41).build(), other);
  };
  ASSERT_EQ(types(tracker.observe(observe(abba()))), std::vector<Type>{Type::kOpened});
  EXPECT_TRUE(tracker.observe(calm()).empty());
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(healthy())).empty());  // missed once
  for (int i = 0; i < 3; ++i) {
    clock.advance(100ms);
    EXPECT_TRUE(tracker.observe(calm()).empty()) << i;
  }
  EXPECT_TRUE(tracker.observe(observe(abba())).empty());  // the same incident goes on
  ASSERT_EQ(tracker.openIncidents().size(), 1U);
  EXPECT_EQ(tracker.openIncidents()[0].kind, IncidentKind::kDeadlock);
}

Snapshot abbaWithAThirdThreadBehindIt() {
  return SnapshotBuilder()
      .process(10, "server")
      .waitsOnThread(11, T(10, 12))
      .waitsOnThread(12, T(10, 11))
      .waitsOnThread(13, T(10, 11))
      .build();
}

TEST(IncidentTracker, MoreThreadsPilingUpBehindADeadlockUpdateIt) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  (void)tracker.observe(observe(abba()));
  clock.advance(1s);
  const auto events = tracker.observe(observe(abbaWithAThirdThreadBehindIt()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});
  EXPECT_EQ(events[0].incident.spurs, std::vector<ThreadRef>{T(10, 13)});
  EXPECT_EQ(events[0].incident.updated_at, clock.now());
}

TEST(IncidentTracker, ProcessExitResolvesItsIncidents) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  (void)tracker.observe(observe(abba()));
  clock.advance(5s);
  const auto events = tracker.exited(kProcess);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the process exited");
  EXPECT_TRUE(tracker.trackedProcesses().empty());
  EXPECT_TRUE(tracker.exited(kProcess).empty());
  EXPECT_TRUE(tracker.forget(kProcess, "again").empty());
}

TEST(IncidentTracker, AProcessNoLongerWatchedResolvesItsOwnIncidents) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  (void)tracker.observe(observe(abba()));
  const auto events = tracker.forget(kProcess, "the process is no longer watched");
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the process is no longer watched");
  EXPECT_TRUE(tracker.openIncidents().empty());
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
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
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

// The capture of a hang's evidence stops its thread: the stop counts as the thread being
// scheduled, and the hang was resolved ("the thread moved on") and opened again a threshold later.
TEST(IncidentTracker, AHangIsNotEndedByTheStopThatTookItsEvidence) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(30s);
  ASSERT_EQ(types(tracker.observe(observe(blockedOnMutex(7)))), std::vector<Type>{Type::kOpened});
  // Sampled while the capture stopped it, then once after: scheduled each time, same wait.
  clock.advance(1s);
  auto during = observe(blockedOnMutex(8));
  during.disturbed = {Pid{10}};
  EXPECT_TRUE(tracker.observe(during).empty());
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(9))).empty());
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(9))).empty());
  EXPECT_EQ(tracker.openIncidents().size(), 1U);
  // Scheduled with nothing stopping it: it ran.
  clock.advance(1s);
  const auto events = tracker.observe(observe(blockedOnMutex(10)));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the thread moved on");
}

TEST(IncidentTracker, AWallClockStepForwardDoesNotOpenAHangEarly) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(10s);
  clock.stepWallClock(1h);  // NTP sets the date forward: 10 s have passed, not an hour
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  EXPECT_EQ(tracker.waitTime(kProcess, Tid{11}), std::chrono::milliseconds(10s));
  clock.advance(20s);
  auto events = tracker.observe(observe(blockedOnMutex(7)));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  EXPECT_EQ(events[0].incident.summary,
            "thread [10:11] t11 in server (pid 10) blocked for 30 s on Mutex m99");
  // Timestamps are what people read: the wall clock's, stepped.
  EXPECT_EQ(events[0].incident.opened_at, clock.now());
}

TEST(IncidentTracker, AWallClockStepBackDoesNotHoldAHangBack) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(15s);
  clock.stepWallClock(-1h);  // NTP sets the date back an hour
  EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(7))).empty());
  EXPECT_EQ(tracker.waitTime(kProcess, Tid{11}), std::chrono::milliseconds(15s));
  clock.advance(15s);
  auto events = tracker.observe(observe(blockedOnMutex(7)));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  ASSERT_EQ(events[0].incident.chains.size(), 1U);
  EXPECT_EQ(events[0].incident.chains[0].nodes[0].wait_time, std::chrono::milliseconds(30s));
  EXPECT_EQ(events[0].incident.opened_at, clock.now());
}

TEST(IncidentTracker, AfterTheWallClockIsSetBackAnIncidentStillReadsOpenedThenUpdatedThenResolved) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const auto opened = tracker.observe(observe(abba()));
  ASSERT_EQ(types(opened), std::vector<Type>{Type::kOpened});
  clock.advance(2s);
  clock.stepWallClock(-1h);  // NTP sets the date back an hour while the deadlock is open
  auto events = tracker.observe(observe(abbaWithAThirdThreadBehindIt()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});
  const auto updated = events[0].incident;
  EXPECT_EQ(updated.updated_at, opened[0].incident.opened_at);
  clock.advance(3s);
  EXPECT_TRUE(tracker.observe(observe(healthy())).empty());
  events = tracker.observe(observe(healthy()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  const auto& resolved = events[0].incident;
  ASSERT_TRUE(resolved.resolved_at.has_value());
  EXPECT_LE(resolved.opened_at, resolved.updated_at);
  EXPECT_EQ(*resolved.resolved_at, resolved.updated_at);
  EXPECT_GE(*resolved.resolved_at, updated.updated_at);
  // Once the wall clock is past the last change again, it is the time read.
  clock.advance(2h);
  (void)tracker.observe(observe(abba()));
  (void)tracker.observe(observe(healthy()));
  events = tracker.observe(observe(healthy()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolved_at, clock.now());
}

TEST(IncidentTracker, ProgressRestartsTheHangClock) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  for (std::uint64_t i = 0; i < 60; ++i) {
    EXPECT_TRUE(tracker.observe(observe(blockedOnMutex(i))).empty()) << i;
    clock.advance(1s);
  }
}

TEST(IncidentTracker, IgnoredWaitsAreNeverHangs) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const auto idle = SnapshotBuilder().process(10, "server").ownerless(11).switches(3).build();
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(tracker.observe(observe(idle)).empty());
    clock.advance(1s);
  }
  EXPECT_EQ(tracker.waitTime(kProcess, Tid{11}), std::chrono::milliseconds(100s));
}

/// 11 and 12 wait on each other, 13 on 11; none runs.
Snapshot abbaWithASpur() {
  return SnapshotBuilder()
      .process(10, "server")
      .waitsOnThread(11, T(10, 12))
      .switches(1)
      .waitsOnThread(12, T(10, 11))
      .switches(1)
      .waitsOnThread(13, T(10, 11))
      .switches(1)
      .build();
}

TEST(IncidentTracker, DeadlockedThreadsAndTheirSpursAreNotAlsoHangs) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const auto s = abbaWithASpur();
  EXPECT_EQ(types(tracker.observe(observe(s))), std::vector<Type>{Type::kOpened});
  for (int i = 0; i < 60; ++i) {
    clock.advance(1s);
    EXPECT_TRUE(tracker.observe(observe(s)).empty()) << i;
  }
}

TEST(IncidentTracker, AThreadOfAnOpenDeadlockLeftAloneForOneSampleIsNotAlsoAHang) {
  // Seen on a loaded machine: one thread of the cycle caught out of its wait for one sample
  // (a signal, a ptrace stop restarting its call); the other, past the threshold in the
  // cycle's wait, opened a hang beside the deadlock that was still open.
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const auto cycle = abbaWithASpur();
  const auto one_side = SnapshotBuilder()
                            .process(10, "server")
                            .running(11)
                            .waitsOnThread(12, T(10, 11))
                            .switches(1)
                            .waitsOnThread(13, T(10, 11))
                            .switches(1)
                            .build();
  EXPECT_EQ(types(tracker.observe(observe(cycle))), std::vector<Type>{Type::kOpened});
  clock.advance(40s);
  EXPECT_TRUE(tracker.observe(observe(cycle)).empty());
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(one_side)).empty());
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(cycle)).empty());
  EXPECT_EQ(tracker.openIncidents().size(), 1U);
  // Once the cycle is gone for good, what is still waiting is a hang of its own.
  clock.advance(1s);
  EXPECT_TRUE(tracker.observe(observe(one_side)).empty());
  clock.advance(1s);
  auto events = tracker.observe(observe(one_side));
  ASSERT_EQ(types(events), (std::vector<Type>{Type::kResolved, Type::kOpened, Type::kOpened}));
  EXPECT_EQ(events[0].incident.kind, IncidentKind::kDeadlock);
  EXPECT_EQ(events[1].incident.kind, IncidentKind::kHang);
}

TEST(IncidentTracker, PidReuseIsADifferentProcess) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
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
    IncidentIds before_ids;
    IncidentTracker before(clock, before_ids);
    stored = before.observe(observe(abba()))[0].incident;
    stored.id = 41;
  }
  clock.advance(60s);
  IncidentIds after_ids;
  IncidentTracker after(clock, after_ids);
  EXPECT_TRUE(after.adopt({stored}).empty());
  EXPECT_TRUE(after.observe(observe(abba())).empty());
  ASSERT_EQ(after.openIncidents().size(), 1U);
  EXPECT_EQ(after.openIncidents()[0].id, 41);
  EXPECT_TRUE(after.observe(observe(healthy())).empty());
  const auto events = after.observe(observe(healthy()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.id, 41);
}

TEST(IncidentTracker, AnAdoptedHangContinuesUntilTheThreadRuns) {
  FakeClock clock;
  Incident stored;
  {
    IncidentIds before_ids;
    IncidentTracker before(clock, before_ids);
    (void)before.observe(observe(blockedOnMutex(7)));
    clock.advance(30s);
    stored = before.observe(observe(blockedOnMutex(7)))[0].incident;
  }
  IncidentIds after_ids;
  IncidentTracker after(clock, after_ids);
  EXPECT_TRUE(after.adopt({stored}).empty());
  clock.advance(1s);
  EXPECT_TRUE(after.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(1s);
  EXPECT_TRUE(after.observe(observe(blockedOnMutex(7))).empty());
  clock.advance(1s);
  EXPECT_EQ(types(after.observe(observe(blockedOnMutex(9)))), std::vector<Type>{Type::kResolved});
}

TEST(IncidentTracker, IdsComeFromTheSourceAboveEveryIdAdoptedAndTravelWithTheIncident) {
  FakeClock clock;
  IncidentIds ids(6);
  IncidentTracker tracker(clock, ids);
  const auto opened = tracker.observe(observe(abba()))[0].incident;
  EXPECT_EQ(opened.id, 7);
  const auto events = tracker.forget(kProcess, "gone");
  EXPECT_EQ(events[0].incident.id, 7);

  // An incident open when the service stopped keeps its id, and none is given twice.
  IncidentIds restarted_ids(3);
  IncidentTracker restarted(clock, restarted_ids);
  auto stored = opened;
  stored.id = 12;
  (void)restarted.adopt({stored});
  clock.advance(1s);
  (void)restarted.observe(observe(healthy()));
  clock.advance(1s);
  ASSERT_EQ(types(restarted.observe(observe(healthy()))), std::vector<Type>{Type::kResolved});
  clock.advance(1s);
  EXPECT_EQ(restarted.observe(observe(abba()))[0].incident.id, 13);
}

// ---- a deadlock across processes ---------------------------------------------------------------

// Process 10 ("alpha", thread 10) and process 20 ("beta", thread 20) each hold a file lock the
// other waits for; process 30 ("gamma", thread 30), when present, waits behind the cycle.
const ProcessIdentity kAlpha{Pid{10}, 100};
const ProcessIdentity kBeta{Pid{20}, 200};
const ProcessIdentity kGamma{Pid{30}, 300};

IncidentProcess known(const ProcessIdentity& p) {
  return {p, p == kAlpha ? "alpha" : p == kBeta ? "beta" : "gamma"};
}

/// The cycle as the sample of `self` reads it: its own process first, then the others.
Snapshot crossCycle(const ProcessIdentity& self, bool with_gamma = false) {
  SnapshotBuilder b;
  const auto add = [&](const ProcessIdentity& p) {
    b.process(p.pid.value, known(p).name);
    if (p == kAlpha) b.waitsOnProcesses(10, {20}, ObjectType::kFileLock).switches(1);
    if (p == kBeta) b.waitsOnProcesses(20, {10}, ObjectType::kFileLock).switches(1);
    if (p == kGamma) b.waitsOnProcesses(30, {10}, ObjectType::kFileLock).switches(1);
  };
  add(self);
  for (const auto& p : {kAlpha, kBeta, kGamma}) {
    if (p != self && (p != kGamma || with_gamma)) add(p);
  }
  return b.build();
}

Snapshot alone(const ProcessIdentity& self) {
  return SnapshotBuilder()
      .process(self.pid.value, known(self).name)
      .running(self.pid.value)
      .build();
}

/// What the service hands the tracker for a sample of `self` that follows chains across
/// processes: the other processes of its cycles come with their identities and names.
ProcessObservation observeFrom(const ProcessIdentity& self, const Snapshot& s,
                               std::string name = "") {
  ProcessObservation o;
  o.process = self;
  o.process_name = name.empty() ? known(self).name : std::move(name);
  o.target = targetOf("lockers", {}, /*out_of_proc=*/true);
  o.threads = s.processes.front().threads;
  const std::vector<Pid> roots{self.pid};
  GraphOptions options;
  options.out_of_proc = true;
  auto g = analyzeWaitGraph(s, roots, options);
  o.deadlocks = std::move(g.deadlocks);
  o.chains = std::move(g.chains);
  for (const auto& d : o.deadlocks) {
    for (const auto& t : d.threads) {
      for (const auto& p : {kAlpha, kBeta, kGamma}) {
        if (t.pid == p.pid && p != self &&
            std::none_of(o.peers.begin(), o.peers.end(),
                         [&](const IncidentProcess& x) { return x.identity == p; })) {
          o.peers.push_back(known(p));
        }
      }
    }
  }
  std::sort(o.peers.begin(), o.peers.end(), [](const IncidentProcess& a, const IncidentProcess& b) {
    return a.identity.pid < b.identity.pid;
  });
  return o;
}

class CrossProcessDeadlock : public ::testing::TestWithParam<bool> {
 protected:
  /// The process whose sample comes first, and the other one.
  [[nodiscard]] ProcessIdentity first() const { return GetParam() ? kAlpha : kBeta; }
  [[nodiscard]] ProcessIdentity second() const { return GetParam() ? kBeta : kAlpha; }
  [[nodiscard]] ProcessObservation sampleOf(const ProcessIdentity& p) const {
    return observeFrom(p, crossCycle(p));
  }

  FakeClock clock_;
  IncidentIds ids_;
  IncidentTracker tracker_{clock_, ids_};
};

TEST_P(CrossProcessDeadlock, IsOneIncidentListingBothProcessesWhicheverSampleSeesItFirst) {
  auto events = tracker_.observe(sampleOf(first()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  const auto opened = events[0].incident;
  EXPECT_EQ(opened.kind, IncidentKind::kDeadlock);
  EXPECT_EQ(opened.threads, (std::vector<ThreadRef>{T(10, 10), T(20, 20)}));
  EXPECT_EQ(opened.process, first());
  EXPECT_EQ(opened.process_name, known(first()).name);
  EXPECT_EQ(opened.processes, (std::vector<IncidentProcess>{known(first()), known(second())}));
  EXPECT_EQ(opened.signature, "deadlock [10:10] [20:20]");
  EXPECT_EQ(opened.summary,
            "deadlock of 2 threads in alpha (pid 10) and beta (pid 20): [10:10] t10, [20:20] t20");

  clock_.advance(1s);
  events = tracker_.observe(sampleOf(second()));
  // The other side adds its own chain to the same incident; nothing opens.
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});
  EXPECT_EQ(events[0].incident.opened_at, opened.opened_at);
  EXPECT_EQ(events[0].incident.processes, opened.processes);
  ASSERT_EQ(events[0].incident.chains.size(), 2U);
  EXPECT_EQ(events[0].incident.chains[0].start, T(10, 10));
  EXPECT_EQ(events[0].incident.chains[1].start, T(20, 20));
  for (int i = 0; i < 20; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(tracker_.observe(sampleOf(first())).empty()) << i;
    EXPECT_TRUE(tracker_.observe(sampleOf(second())).empty()) << i;
  }
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  EXPECT_EQ(tracker_.openIncidents()[0].process, first());
}

/// A sample of `self` that leaves the other processes out (IncidentTracker::leadsElsewhere): its
/// own process alone, read from `s`.
ProcessObservation leftOut(const ProcessIdentity& self, Snapshot s) {
  s.processes.resize(1);
  auto o = observeFrom(self, s);
  o.others_left_out = true;
  return o;
}

TEST_P(CrossProcessDeadlock, TheFirstObserverFollowsItAndTheOthersLeaveItOutWithoutEndingIt) {
  (void)tracker_.observe(sampleOf(first()));
  EXPECT_FALSE(tracker_.leadsElsewhere(first())) << "the only one that shows it";
  EXPECT_TRUE(tracker_.leadsElsewhere(second()));
  EXPECT_FALSE(tracker_.leadsElsewhere(kGamma)) << "not in it";
  for (int i = 0; i < 20; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(tracker_.observe(leftOut(second(), crossCycle(second()))).empty()) << i;
    EXPECT_TRUE(tracker_.observe(sampleOf(first())).empty()) << i;
  }
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  // Both show it: the first of them in order leads.
  (void)tracker_.observe(sampleOf(second()));
  EXPECT_FALSE(tracker_.leadsElsewhere(kAlpha));
  EXPECT_TRUE(tracker_.leadsElsewhere(kBeta));
  // The lead's sample misses it once: the other one follows it again.
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(kAlpha, alone(kAlpha))).empty());
  (void)tracker_.observe(sampleOf(kBeta));
  EXPECT_TRUE(tracker_.leadsElsewhere(kAlpha));
  EXPECT_FALSE(tracker_.leadsElsewhere(kBeta));
  EXPECT_EQ(tracker_.openIncidents().size(), 1U);
}

TEST_P(CrossProcessDeadlock, ASampleThatLeftItOutEndsItWhenItsOwnThreadLeftIt) {
  (void)tracker_.observe(sampleOf(first()));
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(leftOut(second(), alone(second()))).empty()) << "once more";
  clock_.advance(1s);
  const auto events = tracker_.observe(leftOut(second(), alone(second())));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
}

TEST_P(CrossProcessDeadlock, ResolvesWhenASampleOfAProcessOfTheCycleNoLongerShowsIt) {
  (void)tracker_.observe(sampleOf(first()));
  (void)tracker_.observe(sampleOf(second()));
  // Two samples in a row: a thread of the cycle may run for a moment (a signal, the ptrace
  // stop that took the evidence) and go back to its wait.
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(second(), alone(second()))).empty());
  clock_.advance(1s);
  const auto events = tracker_.observe(observeFrom(second(), alone(second())));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
  EXPECT_TRUE(tracker_.openIncidents().empty());
  EXPECT_TRUE(tracker_.observe(observeFrom(first(), alone(first()))).empty());
}

TEST_P(CrossProcessDeadlock, AThreadOfTheCycleCaughtOutOfItsWaitForOneSampleDoesNotEndIt) {
  const auto opened = tracker_.observe(sampleOf(first()))[0].incident;
  (void)tracker_.observe(sampleOf(second()));
  for (int i = 0; i < 3; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(tracker_.observe(observeFrom(second(), alone(second()))).empty()) << i;
    EXPECT_TRUE(tracker_.observe(sampleOf(first())).empty()) << i;
    EXPECT_TRUE(tracker_.observe(sampleOf(second())).empty()) << i;
  }
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  EXPECT_EQ(tracker_.openIncidents()[0].opened_at, opened.opened_at);
}

/// The sample of `self` with its own thread still in its wait, but an old view of the other
/// process, whose thread it saw running: no cycle in it.
Snapshot staleView(const ProcessIdentity& self) {
  const int other = self == kAlpha ? 20 : 10;
  return SnapshotBuilder()
      .process(self.pid.value, known(self).name)
      .waitsOnProcesses(self.pid.value, {other}, ObjectType::kFileLock)
      .switches(1)
      .process(other, "other")
      .running(other)
      .build();
}

TEST_P(CrossProcessDeadlock, ASampleWithAStaleViewOfTheOtherProcessDoesNotEndIt) {
  (void)tracker_.observe(sampleOf(first()));
  for (int i = 0; i < 5; ++i) {
    clock_.advance(1s);
    // Its own thread has not moved: the cycle is hidden from it, not gone.
    EXPECT_TRUE(tracker_.observe(observeFrom(second(), staleView(second()))).empty()) << i;
    EXPECT_TRUE(tracker_.observe(sampleOf(first())).empty()) << i;
  }
  clock_.advance(1s);
  EXPECT_EQ(types(tracker_.observe(sampleOf(second()))), std::vector<Type>{Type::kUpdated});
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  // Once no sample shows it any more, it is over.
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(first(), staleView(first()))).empty());
  EXPECT_TRUE(tracker_.observe(observeFrom(second(), staleView(second()))).empty());
  clock_.advance(1s);
  const auto events = tracker_.observe(observeFrom(second(), staleView(second())));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
}

TEST_P(CrossProcessDeadlock, EndsWhenAProcessSeesItsOwnThreadOfTheCycleLeaveItsWait) {
  (void)tracker_.observe(sampleOf(first()));
  (void)tracker_.observe(sampleOf(second()));
  // The name of its wait changes (the lock file was deleted), and it ran (a ptrace stop for the
  // evidence restarted its call): still the same wait.
  auto same = staleView(second());
  same.processes[0].threads[0].wait->name = "lock (deleted)";
  same.processes[0].threads[0].context_switches = 3;
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(second(), same)).empty());
  // Held by a tracer (the evidence capture of another process's sample): a kernel wait that
  // keeps the key of the call it is in; and back.
  auto traced = same;
  traced.processes[0].threads[0].state = RunState::kTraced;
  traced.processes[0].threads[0].wait->type = ObjectType::kKernelWait;
  traced.processes[0].threads[0].wait->name = "tracing stop";
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(second(), traced)).empty());
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(second(), same)).empty());
  // It waits on another object: the cycle it was in is broken.
  auto moved = same;
  moved.processes[0].threads[0].wait->key = 99;
  clock_.advance(1s);
  EXPECT_TRUE(tracker_.observe(observeFrom(second(), moved)).empty());
  clock_.advance(1s);
  const auto events = tracker_.observe(observeFrom(second(), moved));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the cycle is gone");
}

TEST_P(CrossProcessDeadlock, GoesOnWhileOneProcessIsNoLongerWatchedAndTheOtherStillShowsIt) {
  (void)tracker_.observe(sampleOf(first()));
  (void)tracker_.observe(sampleOf(second()));
  EXPECT_TRUE(tracker_.forget(first(), "the process is no longer watched").empty());
  for (int i = 0; i < 3; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(tracker_.observe(sampleOf(second())).empty());
  }
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  // The last process that could tell stops being watched: nobody can, the incident ends.
  const auto events = tracker_.forget(second(), "the process is no longer watched");
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the process is no longer watched");
}

TEST_P(CrossProcessDeadlock, ResolvesWhenAnyProcessOfTheCycleExits) {
  (void)tracker_.observe(sampleOf(first()));
  (void)tracker_.observe(sampleOf(second()));
  clock_.advance(1s);
  const auto events = tracker_.exited(second());
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution,
            known(second()).name + " (pid " + std::to_string(second().pid.value) + ") exited");
  EXPECT_TRUE(tracker_.openIncidents().empty());
  EXPECT_TRUE(tracker_.exited(first()).empty());
}

TEST_P(CrossProcessDeadlock, AnUnwatchedProcessOfTheCycleStillMakesOneIncidentThatEndsWithIt) {
  // Only the first process is watched; the other one is known from the catalog.
  ASSERT_EQ(types(tracker_.observe(sampleOf(first()))), std::vector<Type>{Type::kOpened});
  EXPECT_EQ(tracker_.trackedProcesses(), (std::vector<ProcessIdentity>{kAlpha, kBeta}));
  const auto events = tracker_.exited(second());
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
}

TEST_P(CrossProcessDeadlock, OneIncidentAfterARestartWhicheverSideSamplesFirst) {
  Incident stored;
  {
    IncidentIds before_ids;
    IncidentTracker before(clock_, before_ids);
    stored = before.observe(sampleOf(first()))[0].incident;
    stored.id = 41;
  }
  clock_.advance(60s);
  EXPECT_TRUE(tracker_.adopt({stored}).empty());
  // Re-keyed by its cycle: the other process's sample continues it too.
  const auto events = tracker_.observe(sampleOf(second()));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});  // its own chain joins
  EXPECT_EQ(events[0].incident.id, 41);
  EXPECT_TRUE(tracker_.observe(sampleOf(first())).empty());
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  EXPECT_EQ(tracker_.openIncidents()[0].id, 41);
}

TEST_P(CrossProcessDeadlock, RecordsKeptPerProcessBeforeBecomeOneAtAdoption) {
  // As versions that opened one incident per watched process stored them: each knows only its
  // own process.
  const auto record = [&](const ProcessIdentity& p, std::int64_t id) {
    IncidentIds before_ids;
    IncidentTracker before(clock_, before_ids);
    auto i = before.observe(sampleOf(p))[0].incident;
    i.processes = {known(p)};
    i.id = id;
    clock_.advance(1s);
    return i;
  };
  const auto older = record(first(), 7);
  const auto newer = record(second(), 8);
  const auto events = tracker_.adopt({newer, older});
  ASSERT_EQ(types(events), (std::vector<Type>{Type::kResolved, Type::kUpdated}));
  EXPECT_EQ(events[0].incident.id, 8);
  EXPECT_EQ(events[0].incident.resolution, "the same deadlock as incident 7");
  EXPECT_EQ(events[1].incident.id, 7);
  EXPECT_EQ(events[1].incident.processes,
            (std::vector<IncidentProcess>{known(first()), known(second())}));
  EXPECT_TRUE(tracker_.observe(sampleOf(first())).empty());
  EXPECT_TRUE(tracker_.observe(sampleOf(second())).empty());
  ASSERT_EQ(tracker_.openIncidents().size(), 1U);
  EXPECT_EQ(tracker_.openIncidents()[0].id, 7);
}

INSTANTIATE_TEST_SUITE_P(SampleOrder, CrossProcessDeadlock, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? std::string("AlphaFirst")
                                              : std::string("BetaFirst");
                         });

TEST(IncidentTracker, AProcessWaitingBehindAnotherProcessesCycleSeesItUntilItMovesOn) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  // Only gamma is watched; its thread waits on alpha, which is in a cycle with beta.
  auto o = observeFrom(kGamma, crossCycle(kGamma, true));
  o.peers = {known(kAlpha), known(kBeta)};
  auto events = tracker.observe(o);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  EXPECT_EQ(events[0].incident.spurs, std::vector<ThreadRef>{T(30, 30)});
  EXPECT_EQ(events[0].incident.processes,
            (std::vector<IncidentProcess>{known(kGamma), known(kAlpha), known(kBeta)}));
  EXPECT_TRUE(tracker.observe(o).empty());
  EXPECT_TRUE(tracker.observe(observeFrom(kGamma, alone(kGamma))).empty());
  events = tracker.observe(observeFrom(kGamma, alone(kGamma)));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "no watched process shows the cycle any more");
}

TEST(IncidentTracker, AProcessRenamedByExecIsShownUnderItsNewName) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  (void)tracker.observe(observeFrom(kAlpha, crossCycle(kAlpha), "bash"));
  clock.advance(1s);
  auto events = tracker.observe(observeFrom(kAlpha, crossCycle(kAlpha), "python3"));
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});
  EXPECT_EQ(events[0].incident.process_name, "python3");
  EXPECT_EQ(events[0].incident.processes[0].name, "python3");
  EXPECT_EQ(events[0].incident.summary,
            "deadlock of 2 threads in python3 (pid 10) and beta (pid 20): [10:10] t10, [20:20] "
            "t20");
  EXPECT_TRUE(tracker.observe(observeFrom(kAlpha, crossCycle(kAlpha), "python3")).empty());
  // Its chains too, though the sample read it under its old name.
  const auto open = tracker.openIncidents();
  ASSERT_EQ(open.size(), 1U);
  for (const auto& chain : open[0].chains) {
    for (const auto& node : chain.nodes) {
      if (node.isThread() && node.thread.pid == kAlpha.pid) {
        EXPECT_EQ(node.process_name, "python3");
      }
    }
  }

  // A hang too.
  IncidentIds hangs_ids;
  IncidentTracker hangs(clock, hangs_ids);
  auto o = observe(blockedOnMutex(7));
  (void)hangs.observe(o);
  clock.advance(30s);
  ASSERT_EQ(types(hangs.observe(o)), std::vector<Type>{Type::kOpened});
  o.process_name = "python3";
  events = hangs.observe(o);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kUpdated});
  EXPECT_EQ(events[0].incident.process_name, "python3");
  EXPECT_EQ(events[0].incident.summary,
            "thread [10:11] t11 in python3 (pid 10) blocked for 30 s on Mutex m99");
}

}  // namespace
}  // namespace wctmon
