// The service's decisions with fake platform pieces and a real (temporary) SQLite store.
#include "core/monitor.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "core/snapshot_builder.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_platform.h"
#include "fakes/fake_wait_chain_source.h"

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

Snapshot abba() { return testing::abbaSnapshot(); }

Snapshot healthy() {
  return SnapshotBuilder().process(10, "server").running(11).running(12).build();
}

Config configWith(const std::string& targets) {
  auto parsed = parseConfig(
      R"({"capture": {"min_interval_ms": 60000}, "alerts": {"max_per_window": 2}, "targets": )" +
      targets + "}");
  if (!parsed.config) throw std::runtime_error(parsed.errors.front().toString());
  return *parsed.config;
}

class MonitorTest : public ::testing::Test {
 protected:
  MonitorTest() {
    char dir[] = "/tmp/wctmon-monitor-XXXXXX";
    dir_ = ::mkdtemp(dir);
    store_ = std::move(IncidentStore::open(dir_ / "incidents.db")).value();
  }
  ~MonitorTest() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Monitor> makeMonitor(Config config) {
    return std::make_unique<Monitor>(
        Monitor::Dependencies{source_, &inspector_, catalog_, store_.get(), &alerts_, clock_},
        std::move(config));
  }

  void setSnapshot(const Snapshot& s) {
    source_.setSample(s);
    source_.clearResamples();
    source_.queueResample(s);
  }

  std::filesystem::path dir_;
  std::unique_ptr<IncidentStore> store_;
  FakeWaitChainSource source_;
  FakeThreadInspector inspector_;
  FakeProcessCatalog catalog_;
  FakeAlertSink alerts_;
  FakeClock clock_;
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
  EXPECT_TRUE(monitor->sample(id));
  EXPECT_EQ(inspector_.requested, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  auto stored = *store_->list({});
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].kind, IncidentKind::kDeadlock);
  EXPECT_EQ(stored[0].state, IncidentState::kOpen);
  EXPECT_EQ(stored[0].evidence.size(), 2U);
  ASSERT_EQ(alerts_.sent.size(), 1U);
  EXPECT_EQ(alerts_.sent[0].kind, AlertKind::kDeadlockDetected);

  for (int i = 0; i < 5; ++i) {
    clock_.advance(1s);
    EXPECT_TRUE(monitor->sample(id));
  }
  EXPECT_EQ(store_->list({})->size(), 1U);
  EXPECT_EQ(alerts_.sent.size(), 1U);
  EXPECT_EQ(inspector_.requested.size(), 2U);  // captured once

  setSnapshot(healthy());
  clock_.advance(1s);
  EXPECT_TRUE(monitor->sample(id));
  stored = *store_->list({});
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].evidence.size(), 2U);  // kept through the resolve
  ASSERT_EQ(alerts_.sent.size(), 2U);
  EXPECT_EQ(alerts_.sent[1].kind, AlertKind::kIncidentResolved);
  EXPECT_EQ(monitor->stats().incidents_opened, 1U);
  EXPECT_EQ(monitor->stats().incidents_resolved, 1U);
}

TEST_F(MonitorTest, AProcessThatExitsResolvesItsIncidentsAndIsDropped) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  setSnapshot(abba());
  ASSERT_TRUE(monitor->sample(id));
  source_.setSample(makeError(ErrorCode::kNoSuchProcess, "no such process: 10"));
  EXPECT_FALSE(monitor->sample(id));
  EXPECT_TRUE(monitor->watched().empty());
  const auto stored = *store_->list({});
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
  EXPECT_EQ(stored[0].resolution, "the process exited");
}

TEST_F(MonitorTest, APidReusedBetweenDiscoveryAndSampleIsNotTheWatchedProcess) {
  catalog_.set({processInfo(10, "server", "", 100)});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  setSnapshot(abba());  // the snapshot's start time is 0: another process
  EXPECT_FALSE(monitor->sample(ProcessIdentity{Pid{10}, 100}));
  EXPECT_TRUE(store_->list({})->empty());
}

TEST_F(MonitorTest, EvidenceIsCapturedAtMostOncePerInterval) {
  catalog_.set({processInfo(10, "server")});
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  (void)monitor->discover();
  const ProcessIdentity id{Pid{10}, 0};
  for (int i = 0; i < 3; ++i) {
    setSnapshot(abba());
    ASSERT_TRUE(monitor->sample(id));
    setSnapshot(healthy());
    ASSERT_TRUE(monitor->sample(id));
    clock_.advance(10s);
  }
  EXPECT_EQ(store_->list({})->size(), 3U);
  EXPECT_EQ(inspector_.requested.size(), 2U);
  EXPECT_EQ(monitor->stats().captures, 1U);
  // Alerts: at most 2 per target per minute.
  EXPECT_EQ(alerts_.sent.size(), 2U);
  EXPECT_GT(monitor->stats().alerts_suppressed, 0U);
}

TEST_F(MonitorTest, IncidentsOpenAtRestartContinueOrResolve) {
  catalog_.set({processInfo(10, "server")});
  const ProcessIdentity id{Pid{10}, 0};
  {
    auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
    (void)monitor->discover();
    setSnapshot(abba());
    ASSERT_TRUE(monitor->sample(id));
  }
  auto monitor = makeMonitor(configWith(R"([{"pid": 10}])"));
  monitor->adoptStoredIncidents();
  (void)monitor->discover();
  ASSERT_TRUE(monitor->sample(id));
  EXPECT_EQ(store_->list({})->size(), 1U);  // the same incident, not a second one
  ASSERT_EQ(monitor->openIncidents().size(), 1U);

  catalog_.set({});
  (void)monitor->discover();
  const auto stored = *store_->list({});
  ASSERT_EQ(stored.size(), 1U);
  EXPECT_EQ(stored[0].state, IncidentState::kResolved);
}

TEST_F(MonitorTest, RuntimeTargetsAreAddedRemovedAndPersisted) {
  catalog_.set({processInfo(10, "server"), processInfo(20, "worker")});
  {
    auto monitor = makeMonitor(configWith("[]"));
    EXPECT_TRUE(monitor->discover().added.empty());
    std::vector<ConfigError> errors;
    auto target = parseTarget(R"({"name": "w", "exe": "worker"})", monitor->config(), errors);
    ASSERT_TRUE(monitor->addTarget(*target).ok());
    EXPECT_EQ(monitor->discover().added.size(), 1U);
  }
  auto monitor = makeMonitor(configWith("[]"));
  EXPECT_EQ(monitor->discover().added.size(), 1U);  // registered before the restart
  EXPECT_EQ(*monitor->removeTarget("w"), true);
  EXPECT_EQ(monitor->discover().removed.size(), 1U);
  EXPECT_EQ(*monitor->removeTarget("w"), false);
}

TEST(AlertRateLimiter, AdmitsAtMostMaxPerWindowPerTarget) {
  FakeClock clock;
  AlertRateLimiter limiter(clock, 60s, 2);
  Alert a;
  a.target = "db";
  Alert b;
  b.target = "api";
  Alert service;
  EXPECT_TRUE(limiter.admit(a));
  EXPECT_TRUE(limiter.admit(a));
  EXPECT_FALSE(limiter.admit(a));
  EXPECT_TRUE(limiter.admit(b));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.admit(service));
  clock.advance(60s);
  EXPECT_TRUE(limiter.admit(a));
  EXPECT_EQ(limiter.suppressed(), 1U);
}

}  // namespace
}  // namespace wctmon
