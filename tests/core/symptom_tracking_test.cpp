#include <gtest/gtest.h>

#include "core/busy_verdict.h"
#include "core/incident_tracker.h"
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

ProcessObservation observe(const Snapshot& s) {
  ProcessObservation o;
  o.process = kProcess;
  o.process_name = "server";
  auto target = std::make_shared<TargetConfig>();
  target->name = "servers";
  target->hang_threshold = 30s;
  target->ignore_waits = {ObjectType::kFutex, ObjectType::kCondition, ObjectType::kPoll,
                          ObjectType::kThreadWait};
  o.target = std::move(target);
  o.threads = s.processes.front().threads;
  const std::vector<Pid> roots{kProcess.pid};
  auto g = analyzeWaitGraph(s, roots, {});
  o.deadlocks = std::move(g.deadlocks);
  o.chains = std::move(g.chains);
  return o;
}

/// A lost wakeup: the main thread joins a worker that waits on a condition nobody signals.
Snapshot lostWakeup(std::uint64_t main_runs = 5, std::uint64_t worker_runs = 9) {
  return SnapshotBuilder()
      .process(10, "server")
      .ownerless(10, ObjectType::kThreadWait)
      .switches(main_runs)
      .ownerless(11, ObjectType::kCondition)
      .switches(worker_runs)
      .build();
}

std::vector<Type> types(const std::vector<IncidentEvent>& events) {
  std::vector<Type> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

TEST(StallDetection, EveryThreadBlockedOnTheProcessItselfForTheThresholdIsOneStall) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  (void)tracker.observe(observe(lostWakeup()));
  EXPECT_FALSE(tracker.stallOf(observe(lostWakeup()))) << "a first sample is never a stall";
  clock.advance(29s);
  auto o = observe(lostWakeup());
  (void)tracker.observe(o);
  EXPECT_FALSE(tracker.stallOf(o)) << "below the threshold";
  clock.advance(1s);
  o = observe(lostWakeup());
  (void)tracker.observe(o);
  const auto stall = tracker.stallOf(o);
  ASSERT_TRUE(stall);
  EXPECT_EQ(stall->kind, IncidentKind::kStall);
  EXPECT_EQ(stall->pid, kProcess.pid);
  EXPECT_EQ(stall->target, "servers");
  EXPECT_NE(stall->summary.find("all 2 threads have been blocked for 30 s"), std::string::npos)
      << stall->summary;

  // Raised, it is one incident for the process, listing both blocked threads.
  auto events = tracker.raise(o, *stall);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  EXPECT_EQ(events[0].incident.kind, IncidentKind::kStall);
  EXPECT_EQ(events[0].incident.threads, (std::vector<ThreadRef>{T(10, 10), T(10, 11)}));
  EXPECT_EQ(tracker.openKindOf(kProcess), IncidentKind::kStall);
  EXPECT_TRUE(tracker.raise(o, *stall).empty()) << "raised twice, still one incident";

  // A thread that runs ends it.
  clock.advance(1s);
  const auto moved = observe(lostWakeup(5, 10));
  (void)tracker.observe(moved);
  EXPECT_FALSE(tracker.stallOf(moved));
  events = tracker.clear(IncidentKind::kStall, stall->key, "a thread ran again");
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "a thread ran again");
  EXPECT_FALSE(tracker.openKindOf(kProcess));
}

TEST(StallDetection, AProcessWaitingForOutsideIsIdleNotStalled) {
  // A server in poll, a sleeper, a parent of a long child: something outside ends their waits.
  for (const auto type : {ObjectType::kPoll, ObjectType::kSleep, ObjectType::kSocketIo,
                          ObjectType::kProcessWait, ObjectType::kPipe, ObjectType::kSignalWait}) {
    FakeClock clock;
    IncidentIds ids;
    IncidentTracker tracker(clock, ids);
    const auto idle = SnapshotBuilder()
                          .process(10, "server")
                          .ownerless(10, type)
                          .switches(3)
                          .ownerless(11, ObjectType::kCondition)
                          .switches(3)
                          .build();
    (void)tracker.observe(observe(idle));
    clock.advance(120s);
    const auto o = observe(idle);
    (void)tracker.observe(o);
    EXPECT_FALSE(tracker.stallOf(o)) << toString(type);
  }
}

TEST(StallDetection, ARunningThreadAStoppedOneAnUnknownRunCountOrATimedWaitIsNoStall) {
  const Snapshot cases[] = {
      SnapshotBuilder()
          .process(10)
          .ownerless(10, ObjectType::kCondition)
          .switches(1)
          .running(11)
          .build(),
      SnapshotBuilder()
          .process(10)
          .ownerless(10, ObjectType::kCondition)
          .switches(1)
          .ownerless(11, ObjectType::kCondition)
          .switches(1)
          .stopped()
          .build(),
      SnapshotBuilder().process(10).ownerless(10, ObjectType::kCondition).build(),
      SnapshotBuilder()
          .process(10)
          .ownerless(10, ObjectType::kCondition)
          .switches(1)
          .timeout(std::chrono::minutes(1))
          .build(),
  };
  for (const auto& s : cases) {
    FakeClock clock;
    IncidentIds ids;
    IncidentTracker tracker(clock, ids);
    (void)tracker.observe(observe(s));
    clock.advance(60s);
    const auto o = observe(s);
    (void)tracker.observe(o);
    EXPECT_FALSE(tracker.stallOf(o));
  }
}

TEST(StallDetection, ADeadlockedProcessIsTheDeadlockNotAlsoAStall) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const auto abba = SnapshotBuilder()
                        .process(10, "server")
                        .waitsOnThread(11, T(10, 12))
                        .switches(4)
                        .waitsOnThread(12, T(10, 11))
                        .switches(4)
                        .build();
  (void)tracker.observe(observe(abba));
  clock.advance(60s);
  const auto o = observe(abba);
  (void)tracker.observe(o);
  EXPECT_EQ(tracker.openKindOf(kProcess), IncidentKind::kDeadlock);
  EXPECT_FALSE(tracker.stallOf(o));
}

TEST(SymptomIncidents, AFailingProbeIsOneIncidentWithEveryChainUntilCleared) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  const auto s = SnapshotBuilder()
                     .process(10, "server")
                     .running(10)
                     .ownerless(11, ObjectType::kCondition)
                     .ownerless(12, ObjectType::kCondition)
                     .build();
  const auto o = observe(s);
  Symptom probe{IncidentKind::kUnresponsive,
                kProcess.pid,
                "web",
                "probe http://127.0.0.1:8080/",
                "http://127.0.0.1:8080/ timed out after 2000 ms, 3 times in a row",
                {}};
  auto events = tracker.raise(o, probe);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  const auto& incident = events[0].incident;
  EXPECT_EQ(incident.kind, IncidentKind::kUnresponsive);
  EXPECT_EQ(incident.target, "servers") << "the target of the observation";
  EXPECT_EQ(incident.threads, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}))
      << "the blocked threads";
  EXPECT_EQ(incident.chains.size(), o.chains.size()) << "every thread's chain";
  EXPECT_EQ(incident.summary,
            "http://127.0.0.1:8080/ timed out after 2000 ms, 3 times in a row; 2 of 3 threads "
            "blocked");
  EXPECT_TRUE(tracker.isOpen(IncidentKind::kUnresponsive, probe.key));
  EXPECT_FALSE(tracker.isOpen(IncidentKind::kServiceHung, probe.key));

  // The process's samples neither resolve it nor open hangs for it.
  clock.advance(60s);
  EXPECT_TRUE(tracker.observe(o).empty());
  EXPECT_TRUE(tracker.clear(IncidentKind::kServiceHung, probe.key, "x").empty());
  events = tracker.clear(IncidentKind::kUnresponsive, probe.key, "the probe passed");
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.resolution, "the probe passed");

  // A symptom naming its thread (a window's) lists that thread only; the process's exit ends
  // it.
  Symptom window{IncidentKind::kWindowHung,
                 kProcess.pid,
                 "gui",
                 "window 0x1a2b4",
                 "window \"Main\" has not answered for 5 s",
                 {Tid{11}}};
  events = tracker.raise(o, window);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kOpened});
  EXPECT_EQ(events[0].incident.threads, (std::vector<ThreadRef>{T(10, 11)}));
  events = tracker.exited(kProcess);
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.kind, IncidentKind::kWindowHung);
}

TEST(SymptomIncidents, AdoptedSymptomIncidentsGoOnUntilCleared) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  Incident stored;
  stored.id = 41;
  stored.kind = IncidentKind::kServiceHung;
  stored.process = kProcess;
  stored.process_name = "svc";
  stored.signature = "service-hung service Spooler";
  (void)tracker.adopt({stored});
  EXPECT_TRUE(tracker.isOpen(IncidentKind::kServiceHung, "service Spooler"));
  const auto events = tracker.clear(IncidentKind::kServiceHung, "service Spooler", "running");
  ASSERT_EQ(types(events), std::vector<Type>{Type::kResolved});
  EXPECT_EQ(events[0].incident.id, 41);
}

}  // namespace
}  // namespace wctmon

namespace wctmon {
namespace {

using namespace std::chrono_literals;

ThreadProfile profileOf(std::vector<HotFunction> first, std::vector<HotFunction> second) {
  return ThreadProfile{1000ms, std::move(first), std::move(second)};
}

TEST(BusyVerdict, TheSameFewFunctionsInBothWindowsIsASpin) {
  auto v = judgeBusy(profileOf({{"spin", "app", 480}, {"yield", "libc.so.6", 15}},
                               {{"spin", "app", 470}, {"yield", "libc.so.6", 20}}));
  EXPECT_TRUE(v.spinning) << v.why_not;
  EXPECT_EQ(v.samples, 985U);
  EXPECT_EQ(hotFunctionsText(v.hot), "spin (app) 950, yield (libc.so.6) 35");

  // Work spread over many functions; hot functions that change; too few samples.
  std::vector<HotFunction> spread;
  for (int i = 0; i < 8; ++i) spread.push_back({"f" + std::to_string(i), "libz.so.1", 60});
  v = judgeBusy(profileOf(spread, spread));
  EXPECT_FALSE(v.spinning);
  EXPECT_EQ(v.why_not, "its time is spread over 8 functions: it is working, not spinning");
  v = judgeBusy(profileOf({{"parse", "app", 400}}, {{"compress", "app", 400}}));
  EXPECT_FALSE(v.spinning);
  EXPECT_EQ(v.why_not,
            "its hot functions changed from one window to the next: it is making progress");
  v = judgeBusy(profileOf({{"spin", "app", 5}}, {{"spin", "app", 400}}));
  EXPECT_FALSE(v.spinning);
  EXPECT_NE(v.why_not.find("too few samples"), std::string::npos);
}

TEST(BusyDetection, AThreadAtAWholeCoreForTheThresholdIsACandidateUntilItSlows) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  auto target = std::make_shared<TargetConfig>();
  target->name = "servers";
  target->busy.threshold = 5s;
  const auto sample = [&](std::chrono::nanoseconds cpu) {
    ProcessObservation o;
    o.process = kProcess;
    o.process_name = "server";
    o.target = target;
    ThreadSample t;
    t.id = T(10, 11);
    t.status = ObjectStatus::kRunning;
    t.cpu_time = cpu;
    o.threads = {t};
    return o;
  };
  std::chrono::nanoseconds cpu{0};
  for (int i = 0; i < 5; ++i) {
    const auto o = sample(cpu);
    (void)tracker.observe(o);
    EXPECT_TRUE(tracker.busyThreads(o).empty()) << i;
    clock.advance(1s);
    cpu += 990ms;  // 99 % of a core
  }
  auto o = sample(cpu);
  (void)tracker.observe(o);
  EXPECT_EQ(tracker.busyThreads(o), std::vector<ThreadRef>{T(10, 11)});
  EXPECT_EQ(tracker.busyFor(kProcess, Tid{11}), std::chrono::milliseconds(5000));

  // Its incident open, it is no longer a candidate; once it uses half a core for three
  // intervals in a row, it resolves (one slow interval is not the end of a spin).
  ASSERT_EQ(
      tracker
          .raise(o,
                 Symptom{
                     IncidentKind::kBusy, kProcess.pid, "servers", "thread 11", "spins", {Tid{11}}})
          .size(),
      1U);
  EXPECT_TRUE(tracker.busyThreads(o).empty());
  EXPECT_TRUE(tracker.settleBusy(o).empty());
  const auto interval = [&](std::chrono::nanoseconds used) {
    clock.advance(1s);
    cpu += used;
    o = sample(cpu);
    (void)tracker.observe(o);
  };
  interval(500ms);
  interval(500ms);
  interval(990ms);  // busy again: the count starts over
  EXPECT_TRUE(tracker.settleBusy(o).empty());
  interval(500ms);
  interval(500ms);
  EXPECT_TRUE(tracker.settleBusy(o).empty());
  interval(500ms);
  const auto events = tracker.settleBusy(o);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].incident.resolution, "the thread no longer uses a whole core");
}

TEST(BusyDetection, TimeInARunQueueCountsAsUseAndASleeperIsNeverBusy) {
  FakeClock clock;
  IncidentIds ids;
  IncidentTracker tracker(clock, ids);
  auto target = std::make_shared<TargetConfig>();
  target->name = "servers";
  target->busy.threshold = 3s;
  const auto sample = [&](std::chrono::nanoseconds cpu, std::chrono::nanoseconds queued) {
    ProcessObservation o;
    o.process = kProcess;
    o.process_name = "server";
    o.target = target;
    ThreadSample t;
    t.id = T(10, 11);
    t.status = ObjectStatus::kRunning;
    t.cpu_time = cpu;
    t.queued_time = queued;
    o.threads = {t};
    return o;
  };
  // A spinner sharing its core with another: half a core each second, and the other half
  // waiting to run. It never sleeps: busy.
  std::chrono::nanoseconds cpu{0};
  std::chrono::nanoseconds queued{0};
  for (int i = 0; i < 4; ++i) {
    (void)tracker.observe(sample(cpu, queued));
    clock.advance(1s);
    cpu += 500ms;
    queued += 480ms;
  }
  auto o = sample(cpu, queued);
  (void)tracker.observe(o);
  EXPECT_EQ(tracker.busyThreads(o), std::vector<ThreadRef>{T(10, 11)});

  // The same half a core, but asleep the rest of the time: not busy, and the count restarts.
  clock.advance(1s);
  cpu += 500ms;
  queued += 10ms;
  o = sample(cpu, queued);
  (void)tracker.observe(o);
  EXPECT_TRUE(tracker.busyThreads(o).empty());
  EXPECT_FALSE(tracker.busyFor(kProcess, Tid{11}).has_value());
}

}  // namespace
}  // namespace wctmon
