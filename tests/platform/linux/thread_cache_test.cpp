// The steady-state cache on a process laid out as /proc with canned files: which threads a
// sample reads again, and what it gives back for the others.
#include "platform/linux/thread_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "platform/linux/proc_tree.h"

namespace wctmon::linux_platform {
namespace {

using testing::ProcTree;
using testing::schedstatLine;
using testing::statLine;

constexpr Pid kPid{4242};
using Tids = std::vector<std::int32_t>;

class ThreadCacheTest : public ::testing::Test {
 protected:
  ThreadCacheTest() {
    tree_.write("4242/stat", statLine(4242, "server", 'S', kStartTime));
    for (const int tid : {4242, 4243, 4244}) start(tid, 5);
  }

  static std::string taskDir(int tid) { return "4242/task/" + std::to_string(tid) + "/"; }

  void start(int tid, std::uint64_t runs) {
    tree_.write(taskDir(tid) + "stat", statLine(tid, "worker", 'S'));
    ran(tid, runs);
  }
  void ran(int tid, std::uint64_t runs) {
    tree_.write(taskDir(tid) + "schedstat", schedstatLine(runs));
  }
  /// As /proc does for a thread that exited, its kept-open schedstat reads nothing any more.
  void end(int tid) {
    tree_.write(taskDir(tid) + "schedstat", "");
    tree_.remove(taskDir(tid));
  }
  /// Whether this file system counts subdirectories in a directory's link count, as /proc does
  /// for threads (the cache's way to know that no thread came or went without listing them).
  bool linkCountsThreads() const {
    struct stat st {};
    return ::stat(tree_.path("4242/task").c_str(), &st) == 0 && st.st_nlink > 2;
  }

  /// One sample as ProcessReader::readCached takes it, the stale threads read by the test:
  /// blocked on a futex whose key is the run count read before (which reading a thread carries
  /// says when it was read), unless the test sets another status or owners.
  Result<ProcessSample> sample(ThreadCache& cache,
                               const std::optional<ProcessActivity>& activity = std::nullopt) {
    reread_.clear();
    auto task_fd = cache.begin(kPid);
    if (!task_fd) return task_fd.error();
    if (auto same = cache.unchanged(activity)) return std::move(*same);
    TaskList tasks(*task_fd);
    auto sweep = cache.sweep(tasks);
    std::vector<TaskReading> readings;
    for (const auto& stale : sweep.stale) {
      reread_.push_back(stale.tid);
      TaskReading r;
      r.sample.id = ThreadRef{kPid, Tid{stale.tid}};
      r.sample.name = names_.contains(stale.tid) ? names_[stale.tid]
                      : stale.tid == kPid.value  ? "server"
                                                 : "worker";
      r.sample.state = RunState::kSleeping;
      r.sample.status = status_.contains(stale.tid) ? status_[stale.tid] : ObjectStatus::kBlocked;
      r.sample.context_switches = stale.runs;
      if (r.sample.status == ObjectStatus::kBlocked) {
        WaitObject w;
        w.type = ObjectType::kFutex;
        w.key = stale.runs.value_or(0);
        w.owner_processes = owners_[stale.tid];
        w.status = w.owner_processes.empty() ? ObjectStatus::kBlocked : ObjectStatus::kOwned;
        r.sample.wait = std::move(w);
      }
      readings.push_back(std::move(r));
    }
    return cache.complete(std::move(sweep.reused), readings);
  }

  static Tids tidsOf(const ProcessSample& p) {
    Tids out;
    for (const auto& t : p.threads) out.push_back(t.id.tid.value);
    return out;
  }
  /// The run count each thread's reading was taken at.
  static std::map<std::int32_t, std::uint64_t> keysOf(const ProcessSample& p) {
    std::map<std::int32_t, std::uint64_t> out;
    for (const auto& t : p.threads) out[t.id.tid.value] = t.wait ? t.wait->key : 0;
    return out;
  }

  static constexpr std::uint64_t kStartTime = 777;
  ProcTree tree_;
  DescriptorBudget budget_{100};
  Tids reread_;
  std::map<std::int32_t, ObjectStatus> status_;
  std::map<std::int32_t, std::vector<Pid>> owners_;
  std::map<std::int32_t, std::string> names_;
};

TEST_F(ThreadCacheTest, TheFirstSampleReadsEveryThreadThenOnlyThoseThatRan) {
  ThreadCache cache(tree_.root(), budget_);
  auto first = sample(cache);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(reread_, (Tids{4242, 4243, 4244}));
  EXPECT_EQ(first->pid, kPid);
  EXPECT_EQ(first->name, "server");
  EXPECT_EQ(first->start_time, kStartTime);
  EXPECT_EQ(cache.reread(), 3U);
  EXPECT_EQ(cache.reused(), 0U);
  EXPECT_EQ(cache.openDescriptors(), 3U);
  EXPECT_EQ(budget_.left(), 97);

  ran(4243, 9);
  auto second = sample(cache);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(reread_, (Tids{4243}));
  EXPECT_EQ(cache.reread(), 1U);
  EXPECT_EQ(cache.reused(), 2U);
  // In tid order, the thread read again between the two reused.
  EXPECT_EQ(tidsOf(*second), (Tids{4242, 4243, 4244}));
  EXPECT_EQ(keysOf(*second),
            (std::map<std::int32_t, std::uint64_t>{{4242, 5}, {4243, 9}, {4244, 5}}));
  EXPECT_EQ(second->threads[1].context_switches, 9U);

  auto third = sample(cache);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(reread_.empty());
  EXPECT_EQ(keysOf(*third), keysOf(*second));
}

TEST_F(ThreadCacheTest, AThreadThatRanIsReadAgainWhenAnotherWentInTheSameSample) {
  ThreadCache cache(tree_.root(), budget_);
  ASSERT_TRUE(sample(cache).ok());
  // As many threads as before, so the known ones are swept first; one of them is gone, so the
  // task directory is listed and swept again.
  ran(4243, 9);
  end(4244);
  start(4245, 1);
  auto s = sample(cache);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(reread_, (Tids{4243, 4245}));
  EXPECT_EQ(tidsOf(*s), (Tids{4242, 4243, 4245}));
  EXPECT_EQ(keysOf(*s)[4243], 9U);  // its new reading, not the one from before it ran
  ASSERT_TRUE(sample(cache).ok());
  EXPECT_TRUE(reread_.empty());
}

TEST_F(ThreadCacheTest, AThreadThatWasNotBlockedIsReadAgainEvenIfItDidNotRun) {
  ThreadCache cache(tree_.root(), budget_);
  status_[4243] = ObjectStatus::kRunning;
  status_[4244] = ObjectStatus::kNoAccess;
  ASSERT_TRUE(sample(cache).ok());
  ASSERT_TRUE(sample(cache).ok());
  EXPECT_EQ(reread_, (Tids{4243, 4244}));
}

TEST_F(ThreadCacheTest, ThreadsThatCameAreReadAndThreadsThatWentAreForgotten) {
  ThreadCache cache(tree_.root(), budget_);
  ASSERT_TRUE(sample(cache).ok());
  start(4250, 1);
  auto grown = sample(cache);
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(reread_, (Tids{4250}));
  EXPECT_EQ(tidsOf(*grown), (Tids{4242, 4243, 4244, 4250}));
  EXPECT_EQ(cache.openDescriptors(), 4U);

  end(4243);
  auto shrunk = sample(cache);
  ASSERT_TRUE(shrunk.ok());
  EXPECT_TRUE(reread_.empty());
  EXPECT_EQ(tidsOf(*shrunk), (Tids{4242, 4244, 4250}));
  EXPECT_EQ(cache.openDescriptors(), 3U);
  EXPECT_EQ(budget_.left(), 97);  // the gone thread's descriptor is closed
}

TEST_F(ThreadCacheTest, WaitsOnWholeProcessesAreReadAgainEveryTenthSample) {
  ThreadCache cache(tree_.root(), budget_);
  owners_[4243] = {Pid{5000}};
  std::vector<int> refreshed;
  for (int i = 1; i <= 25; ++i) {
    ASSERT_TRUE(sample(cache).ok());
    if (i == 1) continue;
    if (reread_ == Tids{4243}) refreshed.push_back(i);
    EXPECT_TRUE(reread_.empty() || reread_ == Tids{4243}) << i;
  }
  // The samples after 10, 20, ... earlier ones: what a pipe's holders are may change without
  // waking its waiter.
  EXPECT_EQ(refreshed, (std::vector<int>{11, 21}));
}

TEST_F(ThreadCacheTest, EverythingIsReadAgainEverySixtiethSample) {
  ThreadCache cache(tree_.root(), budget_);
  ASSERT_TRUE(sample(cache).ok());
  for (int i = 2; i <= 60; ++i) {
    ASSERT_TRUE(sample(cache).ok());
    EXPECT_TRUE(reread_.empty()) << i;
  }
  ASSERT_TRUE(sample(cache).ok());
  EXPECT_EQ(reread_, (Tids{4242, 4243, 4244}));
}

TEST_F(ThreadCacheTest, AMainThreadReadAgainRenamesTheProcessAtOnce) {
  ThreadCache cache(tree_.root(), budget_);
  ASSERT_TRUE(sample(cache).ok());
  names_[4242] = "after-exec";
  names_[4243] = "not-the-main-thread";
  ran(4242, 6);
  ran(4243, 6);
  auto s = sample(cache);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "after-exec");
}

TEST_F(ThreadCacheTest, NothingIsReadWhenNoThreadRanAndAllWereBlocked) {
  if (!linkCountsThreads()) GTEST_SKIP() << "this file system does not count subdirectories";
  ThreadCache cache(tree_.root(), budget_);
  const ProcessActivity idle{.voluntary_switches = 10};
  ASSERT_TRUE(sample(cache, idle).ok());
  // A run count that moved is not even looked at: the process's activity says nothing ran.
  ran(4243, 8);
  auto same = sample(cache, idle);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(reread_.empty());
  EXPECT_EQ(cache.reused(), 3U);
  EXPECT_EQ(cache.reread(), 0U);
  EXPECT_EQ(keysOf(*same)[4243], 5U);
  EXPECT_EQ(same->name, "server");
  EXPECT_EQ(same->start_time, kStartTime);

  const ProcessActivity moved{.voluntary_switches = 11};
  ASSERT_TRUE(sample(cache, moved).ok());
  EXPECT_EQ(reread_, (Tids{4243}));
  // Without an activity (no taskstats) every sample sweeps.
  ran(4244, 8);
  ASSERT_TRUE(sample(cache).ok());
  EXPECT_EQ(reread_, (Tids{4244}));
}

TEST_F(ThreadCacheTest, AnUnchangedActivityIsNotEnoughWhenAThreadWasNotBlocked) {
  if (!linkCountsThreads()) GTEST_SKIP() << "this file system does not count subdirectories";
  ThreadCache cache(tree_.root(), budget_);
  const ProcessActivity idle{.voluntary_switches = 10};
  status_[4244] = ObjectStatus::kRunning;
  ASSERT_TRUE(sample(cache, idle).ok());
  ASSERT_TRUE(sample(cache, idle).ok());
  EXPECT_EQ(reread_, (Tids{4244}));
}

TEST_F(ThreadCacheTest, AnUnchangedActivityIsNotEnoughWhenThreadsCameOrARefreshIsDue) {
  if (!linkCountsThreads()) GTEST_SKIP() << "this file system does not count subdirectories";
  ThreadCache cache(tree_.root(), budget_);
  ProcessActivity activity{.voluntary_switches = 10};
  ASSERT_TRUE(sample(cache, activity).ok());
  // A thread that came has not run yet, as far as the activity of the process goes.
  start(4250, 0);
  ASSERT_TRUE(sample(cache, activity).ok());
  EXPECT_EQ(reread_, (Tids{4250}));

  owners_[4243] = {Pid{5000}};
  ran(4243, 6);
  ++activity.voluntary_switches;
  ASSERT_TRUE(sample(cache, activity).ok());
  EXPECT_EQ(reread_, (Tids{4243}));
  for (int i = 4; i <= 10; ++i) {
    ASSERT_TRUE(sample(cache, activity).ok());
    EXPECT_TRUE(reread_.empty()) << i;
    EXPECT_EQ(cache.reused(), 4U) << i;
  }
  ASSERT_TRUE(sample(cache, activity).ok());  // the 11th: waits on processes are due
  EXPECT_EQ(reread_, (Tids{4243}));
}

TEST_F(ThreadCacheTest, BeyondItsBudgetACacheStillSeesEveryThreadRun) {
  DescriptorBudget small(1);
  {
    ThreadCache cache(tree_.root(), small);
    ASSERT_TRUE(sample(cache).ok());
    EXPECT_EQ(cache.openDescriptors(), 1U);
    EXPECT_EQ(small.left(), 0);
    ran(4242, 6);
    ran(4244, 6);
    ASSERT_TRUE(sample(cache).ok());
    EXPECT_EQ(reread_, (Tids{4242, 4244}));
    EXPECT_EQ(cache.openDescriptors(), 1U);
  }
  EXPECT_EQ(small.left(), 1);
}

TEST_F(ThreadCacheTest, AProcessWithNoThreadLeftIsGone) {
  ThreadCache cache(tree_.root(), budget_);
  ASSERT_TRUE(sample(cache).ok());
  for (const int tid : {4242, 4243, 4244}) end(tid);
  auto gone = sample(cache);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_EQ(gone.error().message, "process 4242 exited during the read");
  EXPECT_EQ(budget_.left(), 100);

  tree_.remove("4242");
  auto absent = sample(cache);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_EQ(absent.error().message, "no such process: 4242");
}

TEST_F(ThreadCacheTest, ANewProcessUnderTheSamePidIsReadAfresh) {
  ThreadCache cache(tree_.root(), budget_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sample(cache).ok());
  for (const int tid : {4242, 4243, 4244}) end(tid);
  ASSERT_FALSE(sample(cache).ok());

  // The pid is taken by another process, started later, whose main thread has exited (so only
  // its stat names it).
  tree_.remove("4242");
  tree_.write("4242/stat", statLine(4242, "newcomer", 'S', kStartTime + 1000));
  start(4260, 5);
  auto s = sample(cache);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->start_time, kStartTime + 1000);
  EXPECT_EQ(s->name, "newcomer");
  EXPECT_EQ(tidsOf(*s), (Tids{4260}));
}

}  // namespace
}  // namespace wctmon::linux_platform
