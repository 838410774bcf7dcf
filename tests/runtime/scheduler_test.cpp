// The scheduler drives a monitor with fake platform pieces: one stuck target must not stop the
// others, its turns are skipped rather than queued, and it is reported overdue.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "core/completion.h"
#include "core/snapshot_builder.h"
#include "fakes/fake_platform.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeProcessCatalog;
using testing::processInfo;
using testing::SnapshotBuilder;

/// Answers every sample with an idle process; samples of `slow_pid` take `delay` on a worker of
/// the pool, as a read stuck in the kernel would.
class SlowSource final : public WaitChainSource {
 public:
  SlowSource(int slow_pid, std::chrono::milliseconds delay) : slow_pid_(slow_pid), delay_(delay) {}

  void setWork(Executor work) { work_ = std::move(work); }

  Result<std::unique_ptr<WaitChainSession>> open(Pid pid) override {
    return std::unique_ptr<WaitChainSession>(std::make_unique<Session>(*this, pid));
  }
  Result<std::unique_ptr<WaitChainSession>> openSystem() override { return open(Pid{0}); }

  int calls(int pid) {
    std::lock_guard lock(mutex_);
    return calls_[pid];
  }

 private:
  class Session final : public WaitChainSession {
   public:
    Session(SlowSource& source, Pid pid) : source_(source), pid_(pid) {}
    ~Session() override { slot_->cancel(); }
    void asyncSample(bool, Executor executor, SampleHandler done) override {
      auto completion = Completion<Snapshot>::make(std::move(executor), std::move(done));
      if (!beginOperation(*slot_, completion, "sample")) return;
      source_.work_([this, slot = slot_, completion, &source = source_, pid = pid_] {
        {
          std::lock_guard lock(source.mutex_);
          ++source.calls_[pid.value];
        }
        if (pid.value == source.slow_pid_) std::this_thread::sleep_for(source.delay_);
        slot->end();
        completion->complete(
            SnapshotBuilder().process(pid.value, "idle").ownerless(pid.value + 1).build());
      });
    }
    void asyncResample(std::vector<ThreadRef>, Executor executor, ThreadsHandler done) override {
      executor([done = std::move(done)] { done(std::vector<ThreadSample>{}); });
    }
    void cancel() override { slot_->cancel(); }

   private:
    SlowSource& source_;
    Pid pid_;
    std::shared_ptr<OperationSlot> slot_ = std::make_shared<OperationSlot>();
  };

  int slow_pid_;
  std::chrono::milliseconds delay_;
  Executor work_;
  std::mutex mutex_;
  std::map<int, int> calls_;
};

TEST(Scheduler, AStuckTargetDoesNotStopTheOthersAndIsSkippedNotQueued) {
  SlowSource source(20, 1500ms);
  FakeProcessCatalog catalog;
  catalog.set({processInfo(10, "a"), processInfo(20, "b"), processInfo(30, "c")});
  SystemClock clock;
  auto config =
      *parseConfig(R"({"sampling": {"interval_ms": 50}, "targets": [{"all": true}]})").config;
  WorkerPool pool(2);
  source.setWork(pool.work());
  Monitor monitor({source, nullptr, catalog, nullptr, nullptr, clock, pool.work()}, config);

  std::atomic<int> health_checks{0};
  std::atomic<bool> ever_unhealthy{false};
  Scheduler::Options options;
  options.discovery_interval = 100ms;
  options.deadline = 200ms;
  options.health_interval = 50ms;
  options.shutdown_grace = 3000ms;
  options.on_health = [&](bool healthy, const SchedulerStats&) {
    ++health_checks;
    if (!healthy) ever_unhealthy = true;
  };
  Scheduler scheduler(monitor, pool, options);
  scheduler.start();
  std::this_thread::sleep_for(1000ms);
  const auto stats = scheduler.stats();

  // The others ran at their interval the whole time; the stuck one was read once: cancelled at
  // its deadline, its later turns were refused while the platform was still stuck in the read,
  // rather than queued behind it.
  EXPECT_GE(source.calls(10), 10);
  EXPECT_GE(source.calls(30), 10);
  EXPECT_EQ(source.calls(20), 1);
  EXPECT_EQ(stats.samples_overdue, 1U);
  EXPECT_EQ(monitor.stats().samples_cancelled, 1U);
  EXPECT_GE(monitor.stats().samples_refused, 10U);
  EXPECT_EQ(stats.jobs, 3U);
  EXPECT_GE(health_checks.load(), 10);
  EXPECT_FALSE(ever_unhealthy.load());

  const auto stopping = std::chrono::steady_clock::now();
  scheduler.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 3s);
}

TEST(Scheduler, ProcessesThatExitAreDroppedAndNewOnesPickedUp) {
  SlowSource source(0, 0ms);
  FakeProcessCatalog catalog;
  catalog.set({processInfo(10, "a")});
  SystemClock clock;
  auto config =
      *parseConfig(R"({"sampling": {"interval_ms": 50}, "targets": [{"all": true}]})").config;
  WorkerPool pool(1);
  source.setWork(pool.work());
  Monitor monitor({source, nullptr, catalog, nullptr, nullptr, clock, pool.work()}, config);
  Scheduler::Options options;
  options.discovery_interval = 50ms;
  Scheduler scheduler(monitor, pool, options);
  scheduler.start();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(scheduler.stats().jobs, 1U);
  catalog.set({processInfo(40, "d")});
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(scheduler.stats().jobs, 1U);
  EXPECT_GE(source.calls(40), 2);
  const int before = source.calls(10);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(source.calls(10), before);  // no longer sampled
  scheduler.stop();
}

}  // namespace
}  // namespace wctmon
