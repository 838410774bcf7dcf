// The watchers of services stuck pending and of windows that stop answering, on a real worker
// pool with fake platform pieces and a real monitor: their symptoms open incidents and resolve
// them, a reading that fails changes nothing, a reload changes what is watched, a symptom that
// goes away while its process is still analysed is cleared once its incident opens, and a
// platform without the pieces runs nothing. Polls are 100 ms apart (the shortest interval the
// configuration takes), so each test waits for a few of them.
#include "runtime/symptom_watchers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "core/incident_effects.h"
#include "core/snapshot_builder.h"
#include "core/target_registry.h"
#include "fakes/fake_incident_repository.h"
#include "fakes/fake_platform.h"
#include "fakes/fake_wait_chain_source.h"
#include "runtime/worker_pool.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeAlertSink;
using testing::FakeProcessCatalog;
using testing::FakeWaitChainSource;
using testing::processInfo;
using testing::SnapshotBuilder;

/// The SCM's answer, set by the test.
class FakeServiceStatusSource final : public ServiceStatusSource {
 public:
  Result<std::vector<ServiceReading>> list() override {
    std::lock_guard lock(mutex_);
    ++calls_;
    if (failing_) return makeError(ErrorCode::kIo, "the SCM does not answer");
    return readings_;
  }
  void set(std::vector<ServiceReading> readings) {
    std::lock_guard lock(mutex_);
    readings_ = std::move(readings);
  }
  void fail(bool failing) {
    std::lock_guard lock(mutex_);
    failing_ = failing;
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::vector<ServiceReading> readings_;
  bool failing_ = false;
  int calls_ = 0;
};

/// Every window of the asked processes, silent or not as the test says.
class FakeWindowProber final : public WindowProber {
 public:
  Result<std::vector<WindowReading>> windowsOf(std::span<const Pid> pids) override {
    std::lock_guard lock(mutex_);
    std::vector<WindowReading> out;
    for (const auto& w : windows_) {
      if (std::find(pids.begin(), pids.end(), w.pid) != pids.end()) out.push_back(w);
    }
    return out;
  }
  void set(std::vector<WindowReading> windows) {
    std::lock_guard lock(mutex_);
    windows_ = std::move(windows);
  }

 private:
  std::mutex mutex_;
  std::vector<WindowReading> windows_;
};

ServiceReading stuck(std::string name, int pid, ServiceState state = ServiceState::kStartPending) {
  ServiceReading r;
  r.name = std::move(name);
  r.pid = Pid{pid};
  r.state = state;
  r.checkpoint = 1;
  r.wait_hint = 100ms;
  return r;
}

Config configOf(const std::string& json) {
  auto parsed = parseConfig(json);
  if (!parsed) throw std::runtime_error(parsed.error().front().toString());
  return *parsed;
}

template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds within = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return predicate();
}

class SymptomWatchersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_.set({processInfo(40, "spooler"), processInfo(50, "app")});
    source_.setSample(SnapshotBuilder().process(40, "spooler").ownerless(41).build());
    pool_.start();
  }
  void TearDown() override {
    if (watchers_) {
      EXPECT_TRUE(watchers_->stop());
    }
    pool_.stop(2s);
  }

  /// The monitor and the watchers for `config`; `platform`: whether this platform has the SCM and
  /// windows.
  void make(const Config& config, bool platform = true) {
    targets_ = std::make_unique<TargetRegistry>(&store_, config);
    effects_ = std::make_unique<IncidentEffects>(
        IncidentEffects::Dependencies{&store_,
                                      nullptr,
                                      &alerts_,
                                      nullptr,
                                      clock_,
                                      {},
                                      [this] { return targets_->runtime(); }},
        config.alerts);
    monitor_ = std::make_unique<Monitor>(
        Monitor::Dependencies{source_, catalog_, clock_, *targets_, *effects_}, config);
    watchers_ = std::make_unique<SymptomWatchers>(
        SymptomWatchers::Dependencies{*monitor_, platform ? &services_ : nullptr,
                                      platform ? &windows_ : nullptr, clock_, pool_.context(),
                                      pool_.work(),
                                      WorkerPool::on(boost::asio::make_strand(pool_.context()))},
        config);
  }

  std::vector<Incident> incidents(std::optional<IncidentKind> kind,
                                  std::optional<IncidentState> state) {
    IncidentQuery query;
    query.kind = kind;
    query.state = state;
    auto listed = store_.list(query);
    return listed ? listed->incidents : std::vector<Incident>{};
  }

  SystemClock clock_;
  FakeWaitChainSource source_;
  FakeProcessCatalog catalog_;
  FakeAlertSink alerts_;
  testing::FakeIncidentRepository store_;
  FakeServiceStatusSource services_;
  FakeWindowProber windows_;
  WorkerPool pool_{2};
  std::unique_ptr<TargetRegistry> targets_;
  std::unique_ptr<IncidentEffects> effects_;
  std::unique_ptr<Monitor> monitor_;
  std::unique_ptr<SymptomWatchers> watchers_;
};

TEST_F(SymptomWatchersTest, AServiceStuckPendingOpensOneIncidentThatResolvesWhenItRuns) {
  make(configOf(R"({"services": {"watch": ["Spooler"], "interval_ms": 100}})"));
  services_.set({stuck("Spooler", 40), stuck("Other", 50)});
  watchers_->start();
  ASSERT_TRUE(eventually([&] {
    return !incidents(IncidentKind::kServiceHung, IncidentState::kOpen).empty();
  })) << "no service-hung incident opened";
  // Polls go on while it holds: still one incident, and none for the service not watched.
  const int calls = services_.calls();
  ASSERT_TRUE(eventually([&] { return services_.calls() >= calls + 3; }));
  const auto open = incidents(IncidentKind::kServiceHung, IncidentState::kOpen);
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0].process.pid, Pid{40});
  EXPECT_EQ(open[0].target, "services");
  EXPECT_NE(open[0].summary.find("service Spooler has been START_PENDING at checkpoint 1"),
            std::string::npos)
      << open[0].summary;

  services_.set({stuck("Spooler", 40, ServiceState::kRunning)});
  ASSERT_TRUE(eventually(
      [&] { return !incidents(IncidentKind::kServiceHung, IncidentState::kResolved).empty(); }));
  EXPECT_EQ(incidents(IncidentKind::kServiceHung, IncidentState::kResolved)[0].resolution,
            "service Spooler is RUNNING now");
  EXPECT_TRUE(incidents(IncidentKind::kServiceHung, IncidentState::kOpen).empty());
}

TEST_F(SymptomWatchersTest, AReadingThatFailsNeitherOpensNorResolves) {
  make(configOf(R"({"services": {"watch": "all", "interval_ms": 100}})"));
  services_.set({stuck("Spooler", 40)});
  watchers_->start();
  ASSERT_TRUE(eventually(
      [&] { return !incidents(IncidentKind::kServiceHung, IncidentState::kOpen).empty(); }));
  services_.fail(true);
  const int calls = services_.calls();
  ASSERT_TRUE(eventually([&] { return services_.calls() >= calls + 3; }));
  EXPECT_EQ(incidents(IncidentKind::kServiceHung, IncidentState::kOpen).size(), 1U);
  EXPECT_TRUE(incidents(IncidentKind::kServiceHung, IncidentState::kResolved).empty());
}

TEST_F(SymptomWatchersTest, AReloadThatWatchesNoServicesResolvesAndStopsReadingTheScm) {
  make(configOf(R"({"services": {"watch": ["spooler"], "interval_ms": 100}})"));
  services_.set({stuck("Spooler", 40)});
  watchers_->start();
  ASSERT_TRUE(eventually([&] {
    return !incidents(IncidentKind::kServiceHung, IncidentState::kOpen).empty();
  })) << "service names match without regard to case";
  watchers_->reconfigure(configOf(R"({"services": {"interval_ms": 100}})"));
  ASSERT_TRUE(eventually(
      [&] { return !incidents(IncidentKind::kServiceHung, IncidentState::kResolved).empty(); }));
  EXPECT_EQ(incidents(IncidentKind::kServiceHung, IncidentState::kResolved)[0].resolution,
            "service Spooler: no service is watched any more (services.watch)");
  const int calls = services_.calls();
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(services_.calls(), calls) << "nothing watched: the SCM is not read";
}

TEST_F(SymptomWatchersTest, ASymptomGoneWhileItsProcessIsAnalysedIsClearedOnceItOpens) {
  make(configOf(R"({"services": {"watch": ["Spooler"], "interval_ms": 100}})"));
  source_.holdSamples();
  services_.set({stuck("Spooler", 40)});
  watchers_->start();
  ASSERT_TRUE(eventually(
      [&] { return monitor_->symptomHeld(IncidentKind::kServiceHung, "service Spooler"); }));
  // It runs before its incident could open; the analysis ends after that.
  services_.set({stuck("Spooler", 40, ServiceState::kRunning)});
  const int calls = services_.calls();
  ASSERT_TRUE(eventually([&] { return services_.calls() >= calls + 2; }));
  source_.release();
  ASSERT_TRUE(eventually([&] {
    return !incidents(IncidentKind::kServiceHung, IncidentState::kResolved).empty();
  })) << "the incident that opened late stayed open";
  EXPECT_TRUE(incidents(IncidentKind::kServiceHung, IncidentState::kOpen).empty());
}

TEST_F(SymptomWatchersTest, ASilentWindowOfAWatchedProcessOpensAnIncidentForItsTarget) {
  make(configOf(R"({"sampling": {"interval_ms": 100}, "detection": {"window_hung_ms": 1000},
                    "targets": [{"name": "app", "exe": "app"}]})"));
  static_cast<void>(monitor_->discover());
  WindowReading silent{0x1a2b, Pid{50}, Tid{51}, "Editor", false};
  WindowReading other{0x3c4d, Pid{40}, Tid{41}, "not watched", false};
  windows_.set({silent, other});
  watchers_->start();
  ASSERT_TRUE(eventually(
      [&] { return !incidents(IncidentKind::kWindowHung, IncidentState::kOpen).empty(); }));
  const auto open = incidents(IncidentKind::kWindowHung, IncidentState::kOpen);
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0].process.pid, Pid{50});
  EXPECT_EQ(open[0].target, "app");
  ASSERT_EQ(open[0].threads.size(), 1U);
  EXPECT_EQ(open[0].threads[0].tid, Tid{51});

  silent.responding = true;
  windows_.set({silent, other});
  ASSERT_TRUE(eventually(
      [&] { return !incidents(IncidentKind::kWindowHung, IncidentState::kResolved).empty(); }));
  EXPECT_EQ(incidents(IncidentKind::kWindowHung, IncidentState::kResolved)[0].resolution,
            "window 0x1a2b answers messages again");
}

TEST_F(SymptomWatchersTest, APlatformWithoutScmOrWindowsRunsNothing) {
  make(configOf(R"({"services": {"watch": "all", "interval_ms": 100}})"), false);
  services_.set({stuck("Spooler", 40)});
  watchers_->start();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(services_.calls(), 0);
  EXPECT_TRUE(incidents(std::nullopt, std::nullopt).empty());
}

}  // namespace
}  // namespace wctmon
