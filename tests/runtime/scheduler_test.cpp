// The scheduler drives a monitor with fake platform pieces, on a fake clock and a pool whose
// handlers the test runs: one stuck target must not stop the others, its turns are refused
// rather than queued, and it is cancelled at its deadline. No test waits for time to pass but
// the last, whose workers are real threads that really stay stuck.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "core/completion.h"
#include "core/snapshot_builder.h"
#include "fakes/fake_platform.h"
#include "runtime/scheduler_impl.h"

namespace wctmon {

/// The scheduler's timers in these tests: time moves only when the test says.
struct FakeTimerClock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<FakeTimerClock>;
  static constexpr bool is_steady = true;
  static time_point now() { return time_point(duration(offset.load())); }
  static inline std::atomic<rep> offset{0};
};

}  // namespace wctmon

/// Asio waits on a timer for real time; a fake one must not be waited for at all: every poll
/// checks which timers have expired on the fake clock.
template <>
struct boost::asio::wait_traits<wctmon::FakeTimerClock> {
  static wctmon::FakeTimerClock::duration to_wait_duration(
      const wctmon::FakeTimerClock::duration&) {
    return wctmon::FakeTimerClock::duration::zero();
  }
  static wctmon::FakeTimerClock::duration to_wait_duration(
      const wctmon::FakeTimerClock::time_point&) {
    return wctmon::FakeTimerClock::duration::zero();
  }
};

namespace wctmon {

template class BasicScheduler<FakeTimerClock>;

namespace {

using namespace std::chrono_literals;
using testing::FakeProcessCatalog;
using testing::processInfo;
using testing::SnapshotBuilder;
using TestScheduler = BasicScheduler<FakeTimerClock>;

/// Lets `d` pass in steps of `step`, running on this thread every handler that becomes ready.
void pass(WorkerPool& pool, std::chrono::milliseconds d, std::chrono::milliseconds step = 10ms) {
  for (std::chrono::milliseconds t{0}; t < d; t += step) {
    FakeTimerClock::offset += std::chrono::duration_cast<FakeTimerClock::duration>(step).count();
    while (pool.context().poll() > 0) {
    }
  }
}

/// Answers every sample with an idle process, through the pool's work executor as the Linux
/// source does; the reads of the processes in `stuck` do not end until release(), as a read
/// stuck in the kernel would not. `blocking`: such a read also holds its worker thread until then.
class StuckSource final : public WaitChainSource {
 public:
  explicit StuckSource(std::set<int> stuck, bool blocking = false)
      : stuck_(std::move(stuck)), blocking_(blocking) {}

  /// Where the reads run.
  void setWork(Executor work) { work_ = std::move(work); }

  Result<std::unique_ptr<WaitChainSession>> open(Pid pid) override {
    return std::unique_ptr<WaitChainSession>(std::make_unique<Session>(*this, pid));
  }
  Result<std::unique_ptr<WaitChainSession>> openSystem() override { return open(Pid{0}); }
  [[nodiscard]] Availability availability() const override { return {"fake", true, {}}; }

  int calls(int pid) {
    std::lock_guard lock(mutex_);
    return calls_[pid];
  }

  /// The stuck reads end (with their results); later reads are not stuck.
  void release() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(mutex_);
      stuck_.clear();
      held = std::move(held_);
    }
    released_.notify_all();
    for (auto& finish : held) finish();
  }

 private:
  class Session final : public WaitChainSession {
   public:
    Session(StuckSource& source, Pid pid) : source_(source), pid_(pid) {}
    ~Session() override { slot_->cancel(); }
    void asyncSample(SampleScope, Executor executor, SampleHandler done) override {
      auto completion = Completion<Snapshot>::make(std::move(executor), std::move(done));
      if (!beginOperation(*slot_, completion, "sample")) return;
      source_.work_([slot = slot_, completion, &source = source_, pid = pid_] {
        auto finish = [slot, completion, pid] {
          slot->end();
          completion->completeFromWork(
              SnapshotBuilder().process(pid.value, "idle").ownerless(pid.value + 1).build());
        };
        std::unique_lock lock(source.mutex_);
        ++source.calls_[pid.value];
        if (source.stuck_.contains(pid.value)) {
          if (!source.blocking_) {
            source.held_.push_back(std::move(finish));
            return;
          }
          source.released_.wait(lock, [&] { return !source.stuck_.contains(pid.value); });
        }
        lock.unlock();
        finish();
      });
    }
    void asyncResample(std::vector<ThreadRef>, Executor executor, ThreadsHandler done) override {
      executor([done = std::move(done)] { done(std::vector<ThreadSample>{}); });
    }
    void cancel() override { slot_->cancel(); }

   private:
    StuckSource& source_;
    Pid pid_;
    std::shared_ptr<OperationSlot> slot_ = std::make_shared<OperationSlot>();
  };

  std::mutex mutex_;
  std::condition_variable released_;
  std::set<int> stuck_;
  bool blocking_;
  Executor work_;
  std::map<int, int> calls_;
  std::vector<std::function<void()>> held_;
};

/// A monitor with no store, inspector or alerts, its effects on `effects`.
struct MonitorUnits {
  MonitorUnits(WaitChainSource& source, ProcessCatalog& catalog, const Clock& clock,
               Executor effects, const Config& config)
      : targets(nullptr, config),
        incidents({nullptr, nullptr, nullptr, nullptr, clock, std::move(effects)}, config.alerts),
        monitor({source, catalog, clock, targets, incidents}, config) {}
  TargetRegistry targets;
  IncidentEffects incidents;
  Monitor monitor;
};

/// Processes of the catalog, every one watched at a 50 ms interval through a StuckSource, on a
/// pool the test runs.
struct Watching {
  Watching(std::set<int> stuck, std::vector<ProcessInfo> processes)
      : source(std::move(stuck)),
        units(source, catalog, clock, pool.work(),
              *parseConfig(R"({"sampling": {"interval_ms": 50}, "targets": [{"all": true}]})")),
        monitor(units.monitor) {
    catalog.set(std::move(processes));
    source.setWork(pool.work());
  }
  WorkerPool pool{WorkerPool::DrivenByCaller{}};
  StuckSource source;
  FakeProcessCatalog catalog;
  SystemClock clock;
  MonitorUnits units;
  Monitor& monitor;
};

TEST(Scheduler, AStuckTargetIsCancelledAtItsDeadlineAndDoesNotStopTheOthers) {
  Watching w({20}, {processInfo(10, "a"), processInfo(20, "b"), processInfo(30, "c")});
  auto& [pool, source, catalog, clock, units, monitor] = w;

  int health_checks = 0;
  bool ever_unhealthy = false;
  TestScheduler::Options options;
  options.discovery_interval = 100ms;
  options.deadline = 200ms;
  options.health_interval = 50ms;
  options.on_health = [&](bool healthy, const SchedulerStats&) {
    ++health_checks;
    if (!healthy) ever_unhealthy = true;
  };
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 1000ms);
  auto stats = scheduler.stats();

  // The others ran at their interval the whole time; the stuck one was read once: cancelled at
  // its deadline, its later turns were refused while the platform was still stuck in the read,
  // rather than queued behind it.
  EXPECT_GE(source.calls(10), 19);
  EXPECT_GE(source.calls(30), 19);
  EXPECT_EQ(source.calls(20), 1);
  EXPECT_EQ(stats.samples_overdue, 1U);
  EXPECT_EQ(monitor.stats().samples_cancelled, 1U);
  EXPECT_GE(monitor.stats().samples_refused, 15U);
  // Skipped: only the stuck one's turns before its deadline; nothing piled up behind the read.
  EXPECT_LE(stats.samples_skipped, 5U);
  EXPECT_EQ(stats.jobs, 3U);
  EXPECT_GE(health_checks, 19);
  EXPECT_FALSE(ever_unhealthy);

  // When the read finally ends, its result is dropped and the process is sampled again.
  source.release();
  pass(pool, 100ms);
  EXPECT_GE(source.calls(20), 2);
  EXPECT_EQ(monitor.stats().samples_cancelled, 1U);
  scheduler.stop();
}

TEST(Scheduler, OverdueSamplesOfOneTargetAreOneLogLineAMinute) {
  Watching w({20, 40}, {processInfo(10, "a"), processInfo(20, "b"), processInfo(40, "d")});
  auto& [pool, source, catalog, clock, units, monitor] = w;
  std::ostringstream log;
  const auto before = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_st>(log)));
  TestScheduler::Options options;
  options.discovery_interval = 100ms;
  options.deadline = 200ms;
  options.health_interval = 50ms;
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 600ms);
  EXPECT_EQ(scheduler.stats().samples_overdue, 2U);
  source.release();
  pass(pool, 100ms);
  scheduler.stop();
  spdlog::set_default_logger(before);
  // Both cancelled, one line: the other waits for the next line of that target, at most a
  // minute on, which counts it.
  const auto text = log.str();
  std::size_t lines = 0;
  for (auto at = text.find("past its"); at != std::string::npos;
       at = text.find("past its", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1U) << text;
  EXPECT_NE(text.find("(target \""), std::string::npos) << text;
}

// A turn waits in its strand's queue between its tick and its start, holding the previous
// sample's start time: a health check in between took it for a sample past its deadline, and
// cancelled it. A ring of a thousand watched processes, whose turns all come due together, had
// a hundred such samples a second.
TEST(Scheduler, ATurnStillQueuedIsNotASampleRunningLate) {
  Watching w({}, {processInfo(10, "a"), processInfo(20, "b"), processInfo(30, "c")});
  auto& [pool, source, catalog, clock, units, monitor] = w;
  TestScheduler::Options options;
  options.discovery_interval = 100ms;
  options.deadline = 20ms;  // shorter than the 50 ms interval; every sample ends at once
  options.health_interval = 10ms;
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 1000ms);
  EXPECT_GE(source.calls(10), 19);
  EXPECT_EQ(scheduler.stats().samples_overdue, 0U);
  EXPECT_EQ(monitor.stats().samples_cancelled, 0U);
  scheduler.stop();
}

TEST(Scheduler, ATurnWhoseSampleStillRunsIsSkipped) {
  Watching w({10}, {processInfo(10, "a")});
  auto& [pool, source, catalog, clock, units, monitor] = w;
  TestScheduler::Options options;
  options.deadline = 10s;  // longer than the test: the sample is never cancelled
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 500ms);
  EXPECT_EQ(source.calls(10), 1);
  EXPECT_GE(scheduler.stats().samples_skipped, 9U);
  EXPECT_EQ(scheduler.stats().samples_overdue, 0U);
  source.release();
  pass(pool, 100ms);
  EXPECT_GE(source.calls(10), 2);
  EXPECT_EQ(monitor.stats().samples, static_cast<std::uint64_t>(source.calls(10)));
  // The held sample took the half second it was held; the later ones no time at all.
  EXPECT_EQ(scheduler.stats().last_sample, 0us);
  EXPECT_GE(scheduler.stats().p99_sample, 490ms);
  EXPECT_TRUE(scheduler.stats().healthy);
  scheduler.stop();
}

TEST(Scheduler, ProcessesThatExitAreDroppedAndNewOnesPickedUp) {
  Watching w({}, {processInfo(10, "a")});
  auto& [pool, source, catalog, clock, units, monitor] = w;
  TestScheduler::Options options;
  options.discovery_interval = 50ms;
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 300ms);
  EXPECT_EQ(scheduler.stats().jobs, 1U);
  catalog.set({processInfo(40, "d")});
  pass(pool, 300ms);
  EXPECT_EQ(scheduler.stats().jobs, 1U);
  EXPECT_GE(source.calls(40), 5);
  const int before = source.calls(10);
  pass(pool, 200ms);
  EXPECT_EQ(source.calls(10), before);  // no longer sampled
  EXPECT_TRUE(scheduler.stop());
}

// It ran first an hour after the start: a service restarted more often never pruned its store.
TEST(Scheduler, RetentionRunsSoonAfterTheStartThenEveryInterval) {
  Watching w({}, {processInfo(10, "a")});
  auto& [pool, source, catalog, clock, units, monitor] = w;
  TestScheduler::Options options;
  int passes = 0;
  options.retention = [&passes] { ++passes; };
  options.retention_first = 100ms;
  options.retention_interval = 1s;
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 90ms);
  EXPECT_EQ(passes, 0);
  pass(pool, 20ms);
  EXPECT_EQ(passes, 1);
  pass(pool, 2s);
  EXPECT_EQ(passes, 3);
  scheduler.stop();
}

TEST(Scheduler, StopSaysWhenASampleStuckInThePlatformIsLeftBehind) {
  Watching w({10}, {processInfo(10, "a")});
  auto& [pool, source, catalog, clock, units, monitor] = w;
  TestScheduler::Options options;
  options.deadline = 10s;
  options.shutdown_grace = 50ms;  // waited for in real time: kept short
  TestScheduler scheduler(monitor, pool, options);
  scheduler.start();
  pass(pool, 100ms);
  ASSERT_EQ(source.calls(10), 1);
  // What the stuck read would use must then outlive the scheduler (the service keeps it).
  EXPECT_FALSE(scheduler.stop());
  // The read ends after all: its result goes nowhere, and nothing of it is left.
  source.release();
}

TEST(Scheduler, EveryWorkerStuckIsSaidUnhealthyWithoutAWorkerAndHealthyAgainWhenTheyReturn) {
  // Real threads and real time: every read holds its worker, as a read stuck in the kernel does.
  // The pool grows to its most (three workers for one), then every worker is stuck and the
  // health check, which runs on a worker, cannot run at all: the scheduler's own watch says so.
  WorkerPool pool(1);
  StuckSource source({10, 20, 30, 40}, /*blocking=*/true);
  FakeProcessCatalog catalog;
  catalog.set(
      {processInfo(10, "a"), processInfo(20, "b"), processInfo(30, "c"), processInfo(40, "d")});
  SystemClock clock;
  source.setWork(pool.work());
  MonitorUnits units(
      source, catalog, clock, pool.work(),
      *parseConfig(R"({"sampling": {"interval_ms": 20}, "targets": [{"all": true}]})"));
  Monitor& monitor = units.monitor;
  std::mutex mutex;
  std::vector<bool> verdicts;
  Scheduler::Options options;
  options.discovery_interval = 20ms;
  options.deadline = 50ms;
  options.health_interval = 20ms;
  options.watch_health_check = true;
  options.on_health = [&](bool healthy, const SchedulerStats&) {
    std::lock_guard lock(mutex);
    verdicts.push_back(healthy);
  };
  const auto said = [&](bool healthy) {
    std::lock_guard lock(mutex);
    return std::find(verdicts.begin(), verdicts.end(), healthy) != verdicts.end();
  };
  Scheduler scheduler(monitor, pool, options);
  scheduler.start();
  const auto until = [](const std::function<bool()>& done) {
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(5ms)) {
      if (done()) return true;
    }
    return false;
  };
  ASSERT_TRUE(until([&] { return said(false); }));
  EXPECT_EQ(pool.threads(), 3U);
  EXPECT_TRUE(until([&] { return pool.stuckWorkers(50ms) == 3U; }));
  EXPECT_FALSE(scheduler.stats().healthy);

  // The reads return: the check runs again, says so, and every process is sampled again.
  {
    std::lock_guard lock(mutex);
    verdicts.clear();
  }
  const int before = source.calls(10);
  source.release();
  ASSERT_TRUE(until([&] { return said(true) && source.calls(10) > before + 2; }));
  EXPECT_TRUE(scheduler.stats().healthy);
  EXPECT_TRUE(scheduler.stop());
}

}  // namespace
}  // namespace wctmon
