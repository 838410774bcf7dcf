// The service's decisions with fake platform pieces and an in-memory incident repository.
#include "core/monitor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <future>
#include <thread>

#include "core/run_loop.h"
#include "core/snapshot_builder.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_incident_repository.h"
#include "fakes/fake_platform.h"
#include "fakes/fake_wait_chain_source.h"
#include "support/temp_dir.h"
#include "support/thread_executor.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeAlertSink;
using testing::FakeClock;
using testing::FakeProcessCatalog;
using testing::FakeThreadInspector;
using testing::FakeWaitChainSource;
using testing::processInfo;
using testing::SnapshotBuilder;
using testing::T;
using testing::ThreadExecutor;

Snapshot abba() { return testing::abbaSnapshot(); }

Snapshot healthy() {
  return SnapshotBuilder().process(10, "server").running(11).running(12).build();
}

Config configWith(const std::string& targets) {
  auto parsed = parseConfig(
      R"({"capture": {"min_interval_ms": 60000}, "alerts": {"max_per_window": 2}, "targets": )" +
      targets + "}");
  if (!parsed) throw std::runtime_error(parsed.error().front().toString());
  return *parsed;
}

class MonitorTest : public ::testing::Test {
 protected:
  /// A monitor with the units the service gives it: the targets, and the incident effects (on
  /// `effects`; none: right after each decision). It keeps them alive; targets_ and incidents_
  /// are the last made.
  std::shared_ptr<Monitor> makeMonitor(Config config, ThreadInspector* inspector = nullptr,
                                       Executor effects = {}, DumpKeeper* dumps = nullptr) {
    struct Units {
      Units(MonitorTest& t, Config config, ThreadInspector* inspector, Executor effects,
            DumpKeeper* dumps)
          : targets(&t.store_, config),
            incidents({&t.store_, inspector, &t.alerts_, dumps, t.clock_, std::move(effects),
                       [this] { return targets.runtime(); }},
                      config.alerts),
            monitor({t.source_, t.catalog_, t.clock_, targets, incidents}, std::move(config)) {}
      TargetRegistry targets;
      IncidentEffects incidents;
      Monitor monitor;
    };
    auto units = std::make_shared<Units>(*this, std::move(config),
                                         inspector != nullptr ? inspector : &inspector_,
                                         std::move(effects), dumps);
    targets_ = &units->targets;
    incidents_ = &units->incidents;
    return {units, &units->monitor};
  }

  /// One sample of `process` to its end, as the scheduler runs it: the analysis on an executor,
  /// the side effects right after the decisions (no effects executor).
  bool sample(Monitor& monitor, const ProcessIdentity& process) {
    RunLoop loop;
    std::optional<bool> alive;
    monitor.asyncSample(process, loop.executor(), [&](bool a) { alive = a; });
    loop.run();
    EXPECT_TRUE(alive.has_value()) << "the sample never completed";
    return alive.value_or(false);
  }

  /// A service that stopped while `process` (pid 10) was deadlocked: its incident open in the
  /// store.
  void leaveDeadlockOpenInStore(const ProcessIdentity& process) {
    auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
    (void)monitor->discover();
    setSnapshot(abba());
    ASSERT_TRUE(sample(*monitor, process));
  }

  void setSnapshot(const Snapshot& s) {
    source_.setSample(s);
    source_.clearResamples();
    source_.queueResample(s);
  }

  testing::FakeIncidentRepository store_;
  FakeWaitChainSource source_;
  FakeThreadInspector inspector_;
  FakeProcessCatalog catalog_;
  FakeAlertSink alerts_;
  FakeClock clock_;
  TargetRegistry* targets_ = nullptr;
  IncidentEffects* incidents_ = nullptr;
};

TEST_F(MonitorTest, DiscoveryWatchesWhatTheTargetsSelect) {
  catalog_.set({processInfo(10, "postgres"), processInfo(11, "java", "java -jar api.jar"),
                processInfo(12, "bash"), processInfo(13, "java", "java -jar batch.jar")});
  auto monitor =
      makeMonitor(configWith(R"([{"exe": "post*"}, {"name": "api", "cmdline": "api\\.jar"}])"));
  auto d = monitor->discover();
  ASSERT_EQ(d.added.size(), 2U);
  EXPECT_EQ(d.added[0].process.identity.pid, Pid{10});
  EXPECT_EQ(d.added[1].process.identity.pid, Pid{11});
  EXPECT_EQ(d.added[1].target->name, "api");
  EXPECT_TRUE(monitor->discover().added.empty());  // nothing new

  catalog_.set({processInfo(11, "java", "java -jar api.jar"), processInfo(10, "postgres", "", 5)});
  d = monitor->discover();
  ASSERT_EQ(d.removed.size(), 1U);  // pid 10 was replaced: a new identity
  EXPECT_EQ(d.removed[0], (ProcessIdentity{Pid{10}, 0}));
  ASSERT_EQ(d.added.size(), 1U);
  EXPECT_EQ(d.added[0].process.identity, (ProcessIdentity{Pid{10}, 5}));
}

TEST_F(MonitorTest, ADeadlockIsStoredWithEvidenceAlertedOnceAndResolved) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};

  setSnapshot(abba());
  EXPECT_TRUE(sample(*monitor, id));
  EXPECT_EQ(inspector_.requested, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].kind, IncidentKind::kDeadlock);
  EXPECT_EQ(stored[0].state, IncidentState::kOpen);
  EXPECT_EQ(stored[0].evidence.size(), 2U);
  ASSERT_EQ(alerts_.sent.size(), 1U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);
  // What the API lists of the process: its last sample.
  auto last = monitor->watchedProcess(id)->last_sample;
  ASSERT_TRUE(last);
  EXPECT_EQ(last->state, "deadlocked");
  EXPECT_EQ(last->at, clock_.now());
  EXPECT_GE(last->threads, 2U);
  EXPECT_EQ(monitor->stats().watched_threads, last->threads);
  EXPECT_EQ(monitor->stats().targets, 1U);
  EXPECT_EQ(monitor->stats().opened_by_kind[static_cast<std::size_t>(IncidentKind::kDeadlock)], 1U);

  for (int i = 0; i < 5; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(sample(*monitor, id));
  }
  EXPECT_EQ(store_.list({})->incidents.size(), 1U);
  EXPECT_EQ(alerts_.sent.size(), 1U);
  EXPECT_EQ(inspector_.requested.size(), 2U);  // captured once

  // Resolved when two samples in a row no longer show the cycle.
  setSnapshot(healthy());
  clock_.advance(1s);
  EXPECT_TRUE(sample(*monitor, id));
  EXPECT_EQ(store_.list({})->incidents[0].state, IncidentState::kOpen);
  clock_.advance(1s);
  EXPECT_TRUE(sample(*monitor, id));
  stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(monitor->watchedProcess(id)->last_sample->state, "ok");
  EXPECT_EQ(stored[0].evidence.size(), 2U);  // kept through the resolve
  ASSERT_EQ(alerts_.sent.size(), 2U);
  EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kIncidentResolved);
  EXPECT_EQ(monitor->stats().incidents_opened, 1U);
  EXPECT_EQ(monitor->stats().incidents_resolved, 1U);
  EXPECT_EQ(monitor->stats().opened_by_kind[static_cast<std::size_t>(IncidentKind::kHang)], 0U);

  catalog_.set({});
  (void)monitor->discover();
  EXPECT_EQ(monitor->stats().watched_threads, 0U);  // the count goes with the process
}

TEST_F(MonitorTest, TwoDeadlocksOneSampleFindsInAProcessBothGetEvidenceAndJavaFrames) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  auto snapshot = SnapshotBuilder()
                      .process(10, "server")
                      .waitsOnThread(11, T(10, 12))
                      .switches(1)
                      .waitsOnThread(12, T(10, 11))
                      .switches(1)
                      .waitsOnThread(13, T(10, 14))
                      .switches(1)
                      .waitsOnThread(14, T(10, 13))
                      .switches(1)
                      .build();
  // What a JVM's thread dump gave the sample of thread 13.
  const RuntimeStack java{
      "Java", {StackFrame{0, "Abba.run", "", 0, false, "Abba.java", 7}}, "the JVM's thread dump"};
  snapshot.processes[0].threads[2].runtime_stack = java;
  setSnapshot(snapshot);
  ASSERT_TRUE(sample(*monitor, id));
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 2U);
  for (const auto& incident : stored) {
    ASSERT_EQ(incident.evidence.size(), 2U) << incident.summary;
    for (const auto& c : incident.evidence) {
      EXPECT_EQ(c.runtime_stack.has_value(), c.thread == T(10, 13));
      if (c.runtime_stack) {
        EXPECT_EQ(*c.runtime_stack, java);
      }
    }
  }
  // The interval still holds for later samples.
  clock_.advance(1s);
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(inspector_.requested.size(), 4U);
}

TEST_F(MonitorTest, AHangCarriesTheEvidenceOfItsThreadAndOfTheOwnerItWaitsOn) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server", "hang_threshold_ms": 1000}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  // 11 waits on a mutex that 12 holds while 12 waits for a lock whose holder is not recorded.
  setSnapshot(SnapshotBuilder()
                  .process(10, "server")
                  .waitsOnThread(11, T(10, 12))
                  .switches(5)
                  .ownerless(12, ObjectType::kUnownedLock)
                  .switches(7)
                  .build());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(sample(*monitor, id));
    clock_.advance(1s);
  }
  const auto stored = store_.list({})->incidents;
  ASSERT_FALSE(stored.empty());
  const auto hang = std::find_if(stored.begin(), stored.end(), [](const Incident& i) {
    return i.kind == IncidentKind::kHang && i.threads == std::vector<ThreadRef>{T(10, 11)};
  });
  ASSERT_NE(hang, stored.end());
  std::vector<ThreadRef> captured;
  for (const auto& c : hang->evidence) captured.push_back(c.thread);
  EXPECT_EQ(captured, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
}

TEST_F(MonitorTest, AlertsCarryTheIncidentAndACaptureThatTookNothingIsAlerted) {
  catalog_.set({processInfo(10, "server")});
  inspector_.fail_with = "no permission to stop the thread";
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  EXPECT_TRUE(sample(*monitor, id));

  ASSERT_EQ(alerts_.sent.size(), 2U);
  const auto& opened = alerts_.sent[0];
  EXPECT_EQ(opened.kind, AlertKind::kDeadlockDetected);
  ASSERT_TRUE(opened.incident);
  EXPECT_EQ(opened.incident->threads, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  EXPECT_EQ(opened.incident->evidence.size(), 2U);  // the alert's incident is the stored one
  const auto& failed = alerts_.sent[1];
  EXPECT_EQ(failed.kind, AlertKind::kCaptureFailed);
  EXPECT_EQ(failed.severity, AlertSeverity::kWarning);
  EXPECT_EQ(failed.target, "server");
  EXPECT_EQ(failed.incident, opened.incident);
  EXPECT_NE(failed.message.find("no permission to stop the thread"), std::string::npos);
  const auto field = [&](const std::string& name) {
    for (const auto& [k, v] : failed.fields) {
      if (k == name) return v;
    }
    return std::string("(missing)");
  };
  EXPECT_EQ(field("REASON"), "no permission to stop the thread");
  EXPECT_EQ(field("PID"), "10");
  EXPECT_EQ(field("PROCESS"), "server");
  EXPECT_EQ(field("THREADS"), "10:11 10:12");

  // A capture that took something is not a failure.
  inspector_.fail_with.clear();
  setSnapshot(healthy());
  clock_.advance(1s);
  EXPECT_TRUE(sample(*monitor, id));
  clock_.advance(1s);
  EXPECT_TRUE(sample(*monitor, id));
  clock_.advance(61s);
  setSnapshot(abba());
  EXPECT_TRUE(sample(*monitor, id));
  // The resolution of an alerted opening goes whatever the target's rate limit (2 a minute, the
  // failure took the second): whoever heard of the opening hears of the end.
  ASSERT_EQ(alerts_.sent.size(), 4U);
  EXPECT_EQ(alerts_.sent[2].kind, AlertKind::kIncidentResolved);
  EXPECT_EQ(alerts_.sent[3].kind, AlertKind::kDeadlockDetected);
}

TEST_F(MonitorTest, AProcessThatExitsResolvesItsIncidentsAndIsDropped) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  source_.setSample(makeError(ErrorCode::kNoSuchProcess, "no such process: 10"));
  EXPECT_FALSE(sample(*monitor, id));
  EXPECT_TRUE(monitor->watched().empty());
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].resolution, "the process exited");
}

TEST_F(MonitorTest, WhatEachTargetWatchesIsCountedWithTheIdleTargetsAtZero) {
  catalog_.set({processInfo(10, "postgres"), processInfo(11, "postgres"), processInfo(12, "nginx"),
                processInfo(13, "bash")});
  auto monitor = makeMonitor(configWith(
      R"([{"name": "db", "exe": "postgres"}, {"name": "web", "exe": "nginx"},
          {"name": "batch", "exe": "batch-*"}])"));
  using Counts = std::map<std::string, std::size_t>;
  EXPECT_EQ(monitor->watchedByTarget(), (Counts{{"batch", 0}, {"db", 0}, {"web", 0}}));
  (void)monitor->discover();
  EXPECT_EQ(monitor->watchedByTarget(), (Counts{{"batch", 0}, {"db", 2}, {"web", 1}}));

  // One exits between discoveries: its sample drops it from its target's count at once.
  source_.setSample(makeError(ErrorCode::kNoSuchProcess, "no such process: 12"));
  EXPECT_FALSE(sample(*monitor, ProcessIdentity{Pid{12}, 0}));
  EXPECT_EQ(monitor->watchedByTarget(), (Counts{{"batch", 0}, {"db", 2}, {"web", 0}}));
  catalog_.set({processInfo(10, "postgres")});
  (void)monitor->discover();
  EXPECT_EQ(monitor->watchedByTarget(), (Counts{{"batch", 0}, {"db", 1}, {"web", 0}}));
  EXPECT_EQ(monitor->stats().watched, 1U);
}

TEST_F(MonitorTest, APidReusedBetweenDiscoveryAndSampleIsNotTheWatchedProcess) {
  catalog_.set({processInfo(10, "server", "", 100)});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  setSnapshot(abba());  // the snapshot's start time is 0: another process
  EXPECT_FALSE(sample(*monitor, ProcessIdentity{Pid{10}, 100}));
  EXPECT_TRUE(store_.list({})->incidents.empty());
}

TEST_F(MonitorTest, EvidenceIsCapturedAtMostOncePerInterval) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  for (int i = 0; i < 3; ++i) {
    setSnapshot(abba());
    ASSERT_TRUE(sample(*monitor, id));
    setSnapshot(healthy());
    ASSERT_TRUE(sample(*monitor, id));
    ASSERT_TRUE(sample(*monitor, id));
    clock_.advance(10s);
  }
  EXPECT_EQ(store_.list({})->incidents.size(), 3U);
  EXPECT_EQ(inspector_.requested.size(), 2U);
  EXPECT_EQ(monitor->stats().captures, 1U);
  // Openings: at most 2 per target per minute, each with its resolution; the third opening is
  // held back, and so is its resolution.
  ASSERT_EQ(alerts_.sent.size(), 4U);
  EXPECT_EQ(alerts_.sent[3].kind, AlertKind::kIncidentResolved);
  EXPECT_EQ(monitor->stats().alerts_suppressed, 1U);
}

/// A capture section of the configuration, and the pids dumped under it (in order): deadlocks
/// of pid 10 at 0 s, 10 s (within the capture interval) and 70 s, then a hang of pid 20.
struct DumpPolicyCase {
  std::string capture;
  std::vector<int> dumped;
};

/// Named in test listings by its capture section (the same in every build).
void PrintTo(const DumpPolicyCase& c, std::ostream* out) { *out << c.capture; }

class MonitorDumpTest : public MonitorTest, public ::testing::WithParamInterface<DumpPolicyCase> {};

TEST_P(MonitorDumpTest, DumpsFollowThePolicyOncePerProcessAndCaptureInterval) {
  const auto& c = GetParam();
  testing::TempDir dir("monitor-dumps");
  testing::FakeProcessDumper dumper;
  auto config = *parseConfig(R"({"capture": {"min_interval_ms": 60000, )" + c.capture +
                             R"(}, "targets": [{"pid": 10, "hang_threshold_ms": 1000},)"
                             R"( {"pid": 20, "hang_threshold_ms": 1000}]})");
  DumpKeeper dumps({dumper, dir / "dumps", clock_, [](const Incident&) { return "{}"; }},
                   config.capture);
  catalog_.set({processInfo(10, "server"), processInfo(20, "worker")});
  auto monitor = makeMonitor(config, nullptr, {}, &dumps);
  (void)monitor->discover();
  const ProcessIdentity server{Pid{10}, 0};
  const ProcessIdentity worker{Pid{20}, 0};
  for (const auto after : {0s, 10s, 60s}) {
    clock_.advance(after);
    setSnapshot(abba());
    ASSERT_TRUE(sample(*monitor, server));
    setSnapshot(healthy());
    ASSERT_TRUE(sample(*monitor, server));
    ASSERT_TRUE(sample(*monitor, server));
  }
  setSnapshot(SnapshotBuilder()
                  .process(20, "worker")
                  .waitsOnThread(21, T(20, 22))
                  .switches(3)
                  .running(22)
                  .build());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(sample(*monitor, worker));
    clock_.advance(1s);
  }
  std::vector<int> dumped;
  for (const auto& pid : dumper.pids) dumped.push_back(pid.value);
  EXPECT_EQ(dumped, c.dumped);
  // Each incident dumped says where its dump is.
  std::size_t with_dump = 0;
  const auto stored = store_.list({})->incidents;
  for (const auto& i : stored) {
    if (!i.dump) continue;
    ++with_dump;
    EXPECT_TRUE(std::filesystem::exists(i.dump->path)) << i.dump->path;
  }
  EXPECT_EQ(with_dump, c.dumped.size());
  EXPECT_EQ(monitor->stats().dumps, c.dumped.size());
}

std::string policyCaseName(const ::testing::TestParamInfo<DumpPolicyCase>& info) {
  static const char* const kNames[] = {"deadlock", "incident", "none", "capture_off"};
  return kNames[info.index];
}

INSTANTIATE_TEST_SUITE_P(Policies, MonitorDumpTest,
                         ::testing::Values(DumpPolicyCase{R"("dump": "deadlock")", {10, 10}},
                                           DumpPolicyCase{R"("dump": "incident")", {10, 10, 20}},
                                           DumpPolicyCase{R"("dump": "none")", {}},
                                           DumpPolicyCase{R"("enabled": false)", {}}),
                         policyCaseName);

TEST_F(MonitorTest, TheCaptureIntervalIsNotShortenedByAWallClockStep) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  setSnapshot(healthy());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_TRUE(sample(*monitor, id));
  clock_.stepWallClock(2h);  // the date is set forward; only seconds have passed
  clock_.advance(10s);
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(monitor->stats().incidents_opened, 2U);
  EXPECT_EQ(monitor->stats().captures, 1U);  // the minimum interval (60 s) has not passed
  clock_.advance(60s);
  setSnapshot(healthy());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_TRUE(sample(*monitor, id));
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(monitor->stats().captures, 2U);
}

TEST_F(MonitorTest, IncidentsOpenAtRestartContinueOrResolve) {
  catalog_.set({processInfo(10, "server")});
  const ProcessIdentity id{Pid{10}, 0};
  leaveDeadlockOpenInStore(id);
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  monitor->adoptStoredIncidents();
  (void)monitor->discover();
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(store_.list({})->incidents.size(), 1U);  // the same incident, not a second one
  ASSERT_EQ(incidents_->openIncidents()->size(), 1U);

  catalog_.set({});
  (void)monitor->discover();
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
}

TEST_F(MonitorTest, TheFeedGivesTheOpenIncidentsThenEachRecordedChangeInOrder) {
  catalog_.set({processInfo(10, "server")});
  const ProcessIdentity id{Pid{10}, 0};
  leaveDeadlockOpenInStore(id);
  // Open in the store at start: a follower sees it as open before anything happens.
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  monitor->adoptStoredIncidents();
  std::vector<Incident> initial;
  std::vector<IncidentEvent> events;
  auto subscription =
      incidents_->feed().subscribe([&](const std::vector<Incident>& open) { initial = open; },
                                   [&](const IncidentFeed::Event& e) {
                                     // Recorded before it is published.
                                     const auto stored = store_.get(e->incident.id);
                                     EXPECT_TRUE(stored && stored->has_value());
                                     events.push_back(*e);
                                   });
  ASSERT_EQ(initial.size(), 1U);
  EXPECT_EQ(initial[0].state, IncidentState::kOpen);
  EXPECT_EQ(incidents_->feed().subscribers(), 1U);

  (void)monitor->discover();
  setSnapshot(healthy());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_TRUE(sample(*monitor, id));
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_GE(events.size(), 2U);
  EXPECT_EQ(events[0].type, IncidentEvent::Type::kResolved);
  EXPECT_EQ(events[0].incident.id, initial[0].id);
  const auto opened = std::find_if(events.begin(), events.end(), [](const IncidentEvent& e) {
    return e.type == IncidentEvent::Type::kOpened;
  });
  ASSERT_NE(opened, events.end());
  EXPECT_GT(opened->incident.id, initial[0].id);
  // Published as soon as it is recorded, then again with its evidence once captured.
  EXPECT_TRUE(opened->incident.evidence.empty());
  ASSERT_NE(opened + 1, events.end());
  EXPECT_EQ(opened[1].type, IncidentEvent::Type::kUpdated);
  EXPECT_EQ(opened[1].incident.id, opened->incident.id);
  EXPECT_FALSE(opened[1].incident.evidence.empty());

  // A second follower joins: the incident open now, nothing of the past.
  std::vector<Incident> later;
  auto second = incidents_->feed().subscribe(
      [&](const std::vector<Incident>& open) { later = open; }, [](const IncidentFeed::Event&) {});
  ASSERT_EQ(later.size(), 1U);
  EXPECT_EQ(later[0].id, opened->incident.id);
  subscription.reset();
  second.reset();
  EXPECT_EQ(incidents_->feed().subscribers(), 0U);
  const auto seen = events.size();
  setSnapshot(healthy());
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(events.size(), seen);  // nothing after the subscription ended
}

TEST_F(MonitorTest, RuntimeTargetsAreAddedRemovedAndPersisted) {
  catalog_.set({processInfo(10, "server"), processInfo(20, "worker")});
  {
    auto monitor = makeMonitor(configWith("[]"));
    EXPECT_TRUE(monitor->discover().added.empty());
    auto target = parseTarget(R"({"name": "w", "exe": "worker"})", monitor->config());
    ASSERT_TRUE(targets_->add(*target).ok());
    EXPECT_EQ(monitor->discover().added.size(), 1U);
  }
  auto monitor = makeMonitor(configWith("[]"));
  EXPECT_EQ(monitor->discover().added.size(), 1U);  // registered before the restart
  EXPECT_EQ(*targets_->remove("w"), true);
  EXPECT_EQ(monitor->discover().removed.size(), 1U);
  EXPECT_EQ(*targets_->remove("w"), false);
}

/// Processes 10 ("alpha") and 20 ("beta") each hold a file lock the other waits for; the sample
/// of `self` reads its own process first.
Snapshot crossCycle(int self) {
  SnapshotBuilder b;
  const auto add = [&](int pid) {
    b.process(pid, pid == 10 ? "alpha" : "beta")
        .waitsOnProcesses(pid, {pid == 10 ? 20 : 10}, ObjectType::kFileLock)
        .switches(1);
  };
  add(self);
  add(self == 10 ? 20 : 10);
  return b.build();
}

Config lockersConfig() {
  return configWith(R"([{"name": "lockers", "exe": "*a", "out_of_proc": true}])");
}

TEST_F(MonitorTest, ACycleAcrossTwoWatchedProcessesIsOneRecordAndOneAlertInEitherSampleOrder) {
  for (const int first : {10, 20}) {
    SCOPED_TRACE(first);
    const int second = first == 10 ? 20 : 10;
    catalog_.set({processInfo(10, "alpha"), processInfo(20, "beta")});
    auto monitor = makeMonitor(lockersConfig());
    ASSERT_EQ(monitor->discover().added.size(), 2U);
    const auto before = store_.list({})->incidents.size();
    alerts_.sent.clear();
    for (int round = 0; round < 3; ++round) {
      for (const int pid : {first, second}) {
        setSnapshot(crossCycle(pid));
        ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{pid}, 0}));
        clock_.advance(1s);
      }
    }
    auto stored = store_.list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents;
    ASSERT_EQ(store_.list({})->incidents.size(), before + 1);
    ASSERT_EQ(stored.size(), 1U);
    const auto& i = stored[0];
    EXPECT_EQ(i.process.pid, Pid{first});
    ASSERT_EQ(i.processes.size(), 2U);
    EXPECT_EQ(i.processes[0].identity.pid, Pid{first});
    EXPECT_EQ(i.processes[1].identity.pid, Pid{second});
    EXPECT_EQ(i.processes[first == 10 ? 0 : 1].name, "alpha");
    EXPECT_EQ(i.processes[first == 10 ? 1 : 0].name, "beta");
    EXPECT_EQ(i.chains.size(), 2U);  // each side's own chain
    ASSERT_EQ(alerts_.sent.size(), 1U);
    EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);
    const auto field = [&](const std::string& name) {
      for (const auto& [k, v] : alerts_.sent[0].fields) {
        if (k == name) return v;
      }
      return std::string("(none)");
    };
    EXPECT_EQ(field("PID"), std::to_string(first));
    EXPECT_EQ(field("PIDS"), std::to_string(first) + " " + std::to_string(second));

    // Two samples of the second process in a row show the cycle gone: one resolved record,
    // one alert.
    setSnapshot(SnapshotBuilder().process(second, "x").running(second).build());
    ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{second}, 0}));
    EXPECT_EQ(store_.list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents.size(), 1U);
    ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{second}, 0}));
    EXPECT_TRUE(store_.list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents.empty());
    ASSERT_EQ(alerts_.sent.size(), 2U);
    EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kIncidentResolved);
    clock_.advance(120s);  // past the alert window
  }
}

TEST_F(MonitorTest, EachSampleAsksForWhatItsTargetFollows) {
  catalog_.set({processInfo(10, "alpha"), processInfo(20, "beta")});
  auto monitor = makeMonitor(configWith(R"([
      {"exe": "alpha", "out_of_proc": true, "wct": {"critical_sections": false}},
      {"exe": "beta"}])"));
  ASSERT_EQ(monitor->discover().added.size(), 2U);
  setSnapshot(crossCycle(10));
  ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{10}, 0}));
  EXPECT_TRUE(source_.lastScope().out_of_proc);
  EXPECT_EQ(source_.lastScope().wct, (WctFlags{.com = true, .critical_sections = false}));
  (void)sample(*monitor, ProcessIdentity{Pid{20}, 0});  // what it finds does not matter here
  EXPECT_FALSE(source_.lastScope().out_of_proc);
}

TEST_F(MonitorTest, ACycleWhoseOtherProcessIsNotWatchedListsItAndEndsWhenItExits) {
  catalog_.set({processInfo(10, "alpha"), processInfo(20, "beta")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "alpha", "out_of_proc": true}])"));
  ASSERT_EQ(monitor->discover().added.size(), 1U);
  setSnapshot(crossCycle(10));
  ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{10}, 0}));
  auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  ASSERT_EQ(stored[0].processes.size(), 2U);
  EXPECT_EQ(stored[0].processes[1].name, "beta");
  catalog_.set({processInfo(10, "alpha")});  // beta exited
  (void)monitor->discover();
  stored = store_.list({})->incidents;
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].resolution, "beta (pid 20) exited");
}

TEST_F(MonitorTest, TheOtherProcessOfACycleIsWhoTheSampleSaysAndTheCatalogOnlyWhereItSaysNot) {
  // The catalog's view is older than the sample's: beta has run another program since.
  catalog_.set({processInfo(10, "alpha", {}, 100), processInfo(20, "beta-old", {}, 200)});
  auto monitor = makeMonitor(configWith(R"([{"exe": "alpha", "out_of_proc": true}])"));
  ASSERT_EQ(monitor->discover().added.size(), 1U);
  auto snapshot = crossCycle(10);
  snapshot.processes[0].start_time = 100;
  snapshot.processes[1].start_time = 200;
  snapshot.processes[1].title = "beta: serving";
  setSnapshot(snapshot);
  ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{10}, 100}));
  auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  ASSERT_EQ(stored[0].processes.size(), 2U);
  EXPECT_EQ(stored[0].processes[1], (IncidentProcess{{Pid{20}, 200}, "beta", "beta: serving"}));

  // A platform whose sample names only the other process's threads (WCT): the catalog says who.
  catalog_.set({processInfo(30, "gamma", {}, 300), processInfo(40, "delta", {}, 400)});
  auto windows_like = makeMonitor(configWith(R"([{"exe": "gamma", "out_of_proc": true}])"));
  ASSERT_EQ(windows_like->discover().added.size(), 1U);
  snapshot = SnapshotBuilder()
                 .process(30, "gamma")
                 .waitsOnProcesses(30, {40}, ObjectType::kFileLock)
                 .switches(1)
                 .process(40, "")
                 .waitsOnProcesses(40, {30}, ObjectType::kFileLock)
                 .switches(1)
                 .build();
  snapshot.processes[0].start_time = 300;
  setSnapshot(snapshot);
  ASSERT_TRUE(sample(*windows_like, ProcessIdentity{Pid{30}, 300}));
  stored = store_.list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents;
  const auto found = std::find_if(stored.begin(), stored.end(),
                                  [](const Incident& i) { return i.process.pid == Pid{30}; });
  ASSERT_NE(found, stored.end());
  ASSERT_EQ(found->processes.size(), 2U);
  EXPECT_EQ(found->processes[1], (IncidentProcess{{Pid{40}, 400}, "delta", ""}));
}

TEST_F(MonitorTest, RecordsOfOneCycleStoredPerProcessBecomeOneAtRestart) {
  // Written by a version that opened one incident per watched process.
  for (const int pid : {10, 20}) {
    Incident i;
    i.kind = IncidentKind::kDeadlock;
    i.process = ProcessIdentity{Pid{pid}, 0};
    i.process_name = pid == 10 ? "alpha" : "beta";
    i.target = "lockers";
    i.signature = "deadlock [10:10] [20:20]";
    i.threads = {T(10, 10), T(20, 20)};
    i.opened_at = clock_.now();
    i.updated_at = i.opened_at;
    ASSERT_TRUE(store_.insert(i).ok());
    clock_.advance(1s);
  }
  catalog_.set({processInfo(10, "alpha"), processInfo(20, "beta")});
  auto monitor = makeMonitor(lockersConfig());
  monitor->adoptStoredIncidents();
  (void)monitor->discover();
  for (const int pid : {20, 10}) {
    setSnapshot(crossCycle(pid));
    ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{pid}, 0}));
  }
  const auto open = store_.list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents;
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0].process.pid, Pid{10});  // the older record goes on
  EXPECT_EQ(open[0].processes.size(), 2U);
  EXPECT_EQ(store_.list({})->incidents.size(), 2U);  // nothing new opened
  EXPECT_EQ(incidents_->openIncidents()->size(), 1U);
}

TEST_F(MonitorTest, AProcessRenamedByExecIsShownUnderItsNewName) {
  catalog_.set({processInfo(10, "bash", "bash -c serve")});
  auto monitor = makeMonitor(configWith(R"([{"cmdline": "serve"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(store_.list({})->incidents.at(0).process_name, "bash");

  // exec: same pid and start time, another program; the sampler may still report the old name.
  catalog_.set({processInfo(10, "python3", "python3 serve.py")});
  (void)monitor->discover();
  ASSERT_EQ(monitor->watched().size(), 1U);
  EXPECT_EQ(monitor->watched()[0].process.comm, "python3");
  setSnapshot(testing::abbaSnapshot("bash"));
  ASSERT_TRUE(sample(*monitor, id));
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kOpen);
  EXPECT_EQ(stored[0].process_name, "python3");
  EXPECT_EQ(stored[0].processes.at(0).name, "python3");
  EXPECT_NE(stored[0].summary.find("python3 (pid 10)"), std::string::npos) << stored[0].summary;
}

TEST_F(MonitorTest, AProcessThatExecsIntoAProgramItsTargetDoesNotSelectIsDropped) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{10}, 0}));
  catalog_.set({processInfo(10, "python3")});
  const auto d = monitor->discover();
  ASSERT_EQ(d.removed.size(), 1U);
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].resolution, "the process is no longer watched");
}

/// An inspector whose captures wait until the test lets them go, as a ptrace stop of a thread
/// that takes its time would.
class HeldInspector final : public ThreadInspector {
 public:
  std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) override {
    std::unique_lock lock(mutex_);
    ++started_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
    std::vector<ThreadCapture> out;
    for (const auto& t : threads) {
      ThreadCapture c;
      c.thread = t;
      c.captured = true;
      out.push_back(c);
    }
    return out;
  }
  bool waitStarted() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return started_ > 0; });
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int started_ = 0;
  bool released_ = false;
};

TEST_F(MonitorTest, DecisionsAndStatusReadsDoNotWaitForACaptureOrAStoreWrite) {
  HeldInspector held;
  std::shared_ptr<Monitor> made;
  ThreadExecutor effects;  // gone first: its last task ends before the monitor does
  catalog_.set({processInfo(10, "server")});
  made = makeMonitor(configWith(R"([{"exe": "server"}])"), &held, effects.executor());
  Monitor& monitor = *made;
  (void)monitor.discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  ASSERT_TRUE(sample(monitor, id));  // decided: the incident is open, its capture is under way
  ASSERT_TRUE(held.waitStarted());

  // While the capture holds the effects, everything that reads or decides goes on.
  auto reads = std::async(std::launch::async, [&] {
    const auto stats = monitor.stats();
    const auto open = incidents_->openIncidents();
    return std::make_pair(stats, open->size());
  });
  ASSERT_EQ(reads.wait_for(5s), std::future_status::ready) << "a status read waited for a capture";
  const auto [stats, open] = reads.get();
  EXPECT_EQ(open, 1U);
  EXPECT_EQ(stats.incidents_opened, 1U);
  EXPECT_EQ(stats.pending_effects, 1U);
  // Stored before its capture (which takes a few hundred milliseconds on a real process), its
  // evidence not yet; the alert, which carries the evidence, waits for it.
  const auto before_capture = store_.list({})->incidents;
  ASSERT_EQ(before_capture.size(), 1U);
  EXPECT_EQ(before_capture[0].state, IncidentState::kOpen);
  EXPECT_TRUE(before_capture[0].evidence.empty());
  EXPECT_TRUE(alerts_.sent.empty());
  clock_.advance(1s);
  setSnapshot(healthy());
  // Decided while the capture still runs; samples that may have seen the cycle's threads
  // stopped for it cannot tell the cycle is gone.
  EXPECT_TRUE(sample(monitor, id));
  EXPECT_TRUE(sample(monitor, id));
  EXPECT_EQ(monitor.stats().incidents_resolved, 0U);

  held.release();
  for (int i = 0; i < 500 && monitor.stats().pending_effects > 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(monitor.stats().pending_effects, 0U);
  clock_.advance(1s);
  EXPECT_TRUE(sample(monitor, id));
  EXPECT_TRUE(sample(monitor, id));
  EXPECT_EQ(monitor.stats().incidents_resolved, 1U);
  for (int i = 0; i < 500 && monitor.stats().pending_effects > 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(monitor.stats().pending_effects, 0U);
  // In the order decided: stored with its evidence, then resolved with it; one alert each.
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].evidence.size(), 2U);
  ASSERT_EQ(alerts_.sent.size(), 2U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);
  EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kIncidentResolved);
  EXPECT_EQ(monitor.stats().captures, 1U);
}

TEST_F(MonitorTest, AnIncidentWhoseFirstWriteFailedIsStoredWholeByTheNext) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  store_.failWrites(true);  // the disk is full
  ASSERT_TRUE(sample(*monitor, id));
  EXPECT_EQ(monitor->stats().store_errors, 1U);
  // The incident's alert does not depend on the disk; the store's failure is said too.
  ASSERT_EQ(alerts_.sent.size(), 2U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kStoreFault);
  EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kDeadlockDetected);
  store_.failWrites(false);
  clock_.advance(1s);
  setSnapshot(healthy());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_TRUE(sample(*monitor, id));
  const auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].evidence.size(), 2U);
  EXPECT_EQ(stored[0].id, 1);
}

/// The kinds of the alerts sent.
std::vector<AlertKind> kindsOf(const std::vector<Alert>& alerts) {
  std::vector<AlertKind> out;
  for (const auto& a : alerts) out.push_back(a.kind);
  return out;
}

TEST_F(MonitorTest, AFullDiskKeepsIncidentChangesAlertsOnceAndWritesThemWhenSpaceReturns) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  store_.failWrites(true);
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  // Sampling goes on; the store is tried again at most once a second, and said to fail once.
  for (int i = 0; i < 10; ++i) {
    clock_.advance(400ms);
    ASSERT_TRUE(sample(*monitor, id));
    (void)monitor->discover();
  }
  EXPECT_EQ(kindsOf(alerts_.sent),
            (std::vector<AlertKind>{AlertKind::kStoreFault, AlertKind::kDeadlockDetected}));
  EXPECT_NE(alerts_.sent[0].message.find("incidents.db: disk I/O error"), std::string::npos);
  EXPECT_TRUE(store_.list({})->incidents.empty());
  EXPECT_EQ(monitor->stats().pending_writes, 1U);
  EXPECT_LE(monitor->stats().store_errors, 5U);  // 4 s of retries

  // Space returns while the deadlock is still open: it is stored open, with its evidence, at the
  // next discovery.
  store_.failWrites(false);
  clock_.advance(1s);
  (void)monitor->discover();
  auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kOpen);
  EXPECT_EQ(stored[0].evidence.size(), 2U);
  EXPECT_EQ(monitor->stats().pending_writes, 0U);
  EXPECT_EQ(alerts_.sent.back().kind, AlertKind::kStoreRecovered);

  // The process exits while the disk is full again: its incident is resolved when space returns,
  // not left open.
  store_.failWrites(true);
  catalog_.set({});
  (void)monitor->discover();
  EXPECT_EQ(store_.list({})->incidents[0].state, IncidentState::kOpen);
  store_.failWrites(false);
  clock_.advance(1s);
  (void)monitor->discover();
  stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);  // never a second row
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].resolution, "the process exited");
  EXPECT_EQ(kindsOf(alerts_.sent),
            (std::vector<AlertKind>{AlertKind::kStoreFault, AlertKind::kDeadlockDetected,
                                    AlertKind::kStoreRecovered, AlertKind::kStoreFault,
                                    AlertKind::kIncidentResolved, AlertKind::kStoreRecovered}));
}

TEST_F(MonitorTest, AStoreDeletedWhileRunningIsMadeAgainWithTheOpenIncidents) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_EQ(store_.list({})->incidents.size(), 1U);
  const int checks = store_.checks();

  store_.deleteFile();
  // Noticed at the next discovery, even with no incident to write.
  (void)monitor->discover();
  EXPECT_GT(store_.checks(), checks);
  auto stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kOpen);
  EXPECT_EQ(stored[0].evidence.size(), 2U);
  ASSERT_EQ(alerts_.sent.back().kind, AlertKind::kStoreFault);
  EXPECT_EQ(alerts_.sent.back().message,
            "incidents.db: it was deleted: a new incident store was made there, with the 1 open "
            "incident(s)");
  EXPECT_EQ(store_.lastId().value(), 1);  // the next start goes on from there

  clock_.advance(1s);
  setSnapshot(healthy());
  ASSERT_TRUE(sample(*monitor, id));
  ASSERT_TRUE(sample(*monitor, id));  // two samples without the cycle resolve it
  stored = store_.list({})->incidents;
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
}

TEST_F(MonitorTest, IdsFollowTheHighestTheStoreEverGave) {
  Incident old;
  old.id = 41;
  old.state = IncidentState::kResolved;
  ASSERT_TRUE(store_.insert(old).ok());
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  setSnapshot(abba());
  ASSERT_TRUE(sample(*monitor, ProcessIdentity{Pid{10}, 0}));
  const auto open = store_.list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents;
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0].id, 42);
}

TEST_F(MonitorTest, ASampleCancelledPastItsDeadlineIsCountedAndDecidesNothing) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"exe": "server"}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  source_.holdSamples();
  RunLoop loop;
  std::optional<bool> alive;
  monitor->asyncSample(id, loop.executor(), [&](bool a) { alive = a; });
  loop.run();
  EXPECT_FALSE(alive.has_value());
  monitor->cancelSample(id);
  loop.run();
  ASSERT_EQ(alive, std::optional<bool>(true));  // still watched
  EXPECT_EQ(monitor->stats().samples_cancelled, 1U);
  EXPECT_EQ(monitor->stats().samples, 0U);
  EXPECT_TRUE(store_.list({})->incidents.empty());

  EXPECT_TRUE(sample(*monitor, id));  // the platform is still busy with the cancelled read
  EXPECT_EQ(monitor->stats().samples_refused, 1U);
  source_.release();
  EXPECT_TRUE(sample(*monitor, id));
  EXPECT_EQ(store_.list({})->incidents.size(), 1U);
}

}  // namespace
}  // namespace wctmon
