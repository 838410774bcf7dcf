// The reads periodic samples share: which a sample may take for a process it follows into, and
// when the reads already made prove a cycle whole (and when they do not).
#include "platform/linux/read_history.h"

#include <gtest/gtest.h>

namespace wctmon::linux_platform {
namespace {

using namespace std::chrono_literals;
using TimePoint = ReadHistory::TimePoint;
constexpr auto kFollower = ReadHistory::ReadBy::kFollower;
constexpr auto kItself = ReadHistory::ReadBy::kItself;

const TimePoint kT0{std::chrono::seconds(1000)};

/// Thread `tid` of process `pid` blocked on a file lock held by process `owner`, scheduled in
/// `switches` times so far.
ThreadSample blocked(std::int32_t pid, std::int32_t tid, std::int32_t owner,
                     std::uint64_t switches) {
  ThreadSample t;
  t.id = ThreadRef{Pid{pid}, Tid{tid}};
  t.name = "flock";
  t.state = RunState::kSleeping;
  t.status = ObjectStatus::kBlocked;
  t.context_switches = switches;
  WaitObject w;
  w.type = ObjectType::kFileLock;
  w.status = ObjectStatus::kOwned;
  w.owner_processes = {Pid{owner}};
  w.key = 7;
  t.wait = w;
  return t;
}

ProcessSample process(std::int32_t pid, std::uint64_t start_time, std::vector<ThreadSample> t) {
  return ProcessSample{
      .pid = Pid{pid}, .name = "flock", .start_time = start_time, .title = {}, .threads = t};
}

const std::vector<ThreadRef> kRing{{Pid{10}, Tid{10}}, {Pid{20}, Tid{20}}};

/// Both processes of a ring of two read once, one after the other, over [at, at + 20 ms].
void readRing(ReadHistory& history, TimePoint at, std::uint64_t switches = 3) {
  history.keep(process(10, 100, {blocked(10, 10, 20, switches)}), at, at + 10ms, kFollower);
  history.keep(process(20, 200, {blocked(20, 20, 10, switches)}), at + 10ms, at + 20ms, kFollower);
}

TEST(ReadHistory, AProcessReadRecentlyIsGivenAsReadAndAnOlderOneIsNot) {
  ReadHistory history;
  readRing(history, kT0);
  const auto p = history.recent(Pid{20}, kT0, kT0 + 30ms);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->start_time, 200U);
  ASSERT_EQ(p->threads.size(), 1U);
  EXPECT_EQ(p->threads[0].id.tid, Tid{20});
  EXPECT_FALSE(history.recent(Pid{20}, kT0 + 11ms, kT0 + 30ms).has_value())
      << "read before the bound";
  EXPECT_FALSE(history.recent(Pid{30}, kT0, kT0 + 30ms).has_value()) << "never read";
  EXPECT_TRUE(history.followed(Pid{10}, kT0 + 30ms));
  EXPECT_FALSE(history.followed(Pid{30}, kT0 + 30ms));
}

TEST(ReadHistory, OneReadOfACycleProvesNothing) {
  ReadHistory history;
  readRing(history, kT0);
  EXPECT_FALSE(history.provenBlocked(kRing).has_value());
}

TEST(ReadHistory, TwoReadsOfEveryThreadInTheSameWaitWithoutRunningProveTheCycle) {
  ReadHistory history;
  readRing(history, kT0);
  readRing(history, kT0 + 1s);
  const auto proven = history.provenBlocked(kRing);
  ASSERT_TRUE(proven.has_value());
  ASSERT_EQ(proven->size(), 2U);
  EXPECT_EQ((*proven)[0].id, kRing[0]);
  EXPECT_EQ((*proven)[1].id, kRing[1]);
}

TEST(ReadHistory, AThreadThatRanBetweenItsReadsProvesNothingUntilReadTwiceAgain) {
  ReadHistory history;
  readRing(history, kT0);
  history.keep(process(10, 100, {blocked(10, 10, 20, 3)}), kT0 + 1s, kT0 + 1s + 10ms, kFollower);
  // Scheduled in once more: it may have left its wait and come back to it in between.
  history.keep(process(20, 200, {blocked(20, 20, 10, 4)}), kT0 + 1s + 10ms, kT0 + 1s + 20ms,
               kFollower);
  EXPECT_FALSE(history.provenBlocked(kRing).has_value());
  readRing(history, kT0 + 2s, 3);
  EXPECT_FALSE(history.provenBlocked(kRing).has_value()) << "process 20 ran again";
  history.keep(process(10, 100, {blocked(10, 10, 20, 3)}), kT0 + 3s, kT0 + 3s + 10ms, kFollower);
  history.keep(process(20, 200, {blocked(20, 20, 10, 3)}), kT0 + 3s + 10ms, kT0 + 3s + 20ms,
               kFollower);
  EXPECT_TRUE(history.provenBlocked(kRing).has_value());
}

TEST(ReadHistory, SpansThatShareNoMomentProveNothing) {
  // Thread 10 is shown blocked over [10 ms, 1 s] only; thread 20 from 1.5 s on: both may never
  // have waited at once.
  ReadHistory history;
  history.keep(process(10, 100, {blocked(10, 10, 20, 3)}), kT0, kT0 + 10ms, kFollower);
  history.keep(process(10, 100, {blocked(10, 10, 20, 3)}), kT0 + 1s, kT0 + 1s + 10ms, kFollower);
  history.keep(process(20, 200, {blocked(20, 20, 10, 3)}), kT0 + 1500ms, kT0 + 1510ms, kFollower);
  history.keep(process(20, 200, {blocked(20, 20, 10, 3)}), kT0 + 2s, kT0 + 2s + 10ms, kFollower);
  EXPECT_FALSE(history.provenBlocked(kRing).has_value());
  // Read again later: both spans now reach past 1.51 s.
  history.keep(process(10, 100, {blocked(10, 10, 20, 3)}), kT0 + 3s, kT0 + 3s + 10ms, kFollower);
  EXPECT_TRUE(history.provenBlocked(kRing).has_value());
}

TEST(ReadHistory, AnotherProcessUnderTheSamePidStartsItsHistoryAnew) {
  ReadHistory history;
  readRing(history, kT0);
  // Pid 20 is now another process, its thread 20 in the same wait with as many switches.
  history.keep(process(10, 100, {blocked(10, 10, 20, 3)}), kT0 + 1s, kT0 + 1s + 10ms, kFollower);
  history.keep(process(20, 999, {blocked(20, 20, 10, 3)}), kT0 + 1s + 10ms, kT0 + 1s + 20ms,
               kFollower);
  EXPECT_FALSE(history.provenBlocked(kRing).has_value());
}

TEST(ReadHistory, AConfirmationsReadOfSomeThreadsExtendsTheirSpans) {
  ReadHistory history;
  readRing(history, kT0);
  // A confirmation reads the two threads again: a read of its threads alone, of each process.
  history.keepThreads(process(10, 100, {blocked(10, 10, 20, 3)}), kT0 + 30ms, kT0 + 40ms);
  history.keepThreads(process(20, 200, {blocked(20, 20, 10, 3)}), kT0 + 40ms, kT0 + 50ms);
  EXPECT_TRUE(history.provenBlocked(kRing).has_value());
  // Not a whole read: a sample following into the process takes the whole read before it.
  EXPECT_FALSE(history.recent(Pid{20}, kT0 + 30ms, kT0 + 50ms).has_value());
  // Threads of a process never read whole, or of another process under the pid, are not kept.
  history.keepThreads(process(30, 300, {blocked(30, 30, 10, 3)}), kT0 + 60ms, kT0 + 70ms);
  EXPECT_FALSE(history.followed(Pid{30}, kT0 + 70ms));
}

TEST(ReadHistory, AThreadMissingFromTheReadsOrNotBlockedProvesNothing) {
  ReadHistory history;
  readRing(history, kT0);
  readRing(history, kT0 + 1s);
  const std::vector<ThreadRef> with_unknown{kRing[0], kRing[1], {Pid{20}, Tid{21}}};
  EXPECT_FALSE(history.provenBlocked(with_unknown).has_value());
  auto running = blocked(20, 20, 10, 3);
  running.status = ObjectStatus::kRunning;
  running.wait.reset();
  history.keep(process(20, 200, {running}), kT0 + 2s, kT0 + 2s + 10ms, kFollower);
  EXPECT_FALSE(history.provenBlocked(kRing).has_value());
}

TEST(ReadHistory, ReadsNotMadeAgainForTenSecondsAreDropped) {
  ReadHistory history;
  readRing(history, kT0);
  EXPECT_EQ(history.size(), 2U);
  history.keep(process(30, 300, {}), kT0 + 5s, kT0 + 5s, kFollower);
  EXPECT_EQ(history.size(), 3U);
  history.keep(process(30, 300, {}), kT0 + 10s + 21ms, kT0 + 10s + 21ms, kFollower);
  EXPECT_EQ(history.size(), 1U);
  EXPECT_TRUE(history.followed(Pid{30}, kT0 + 10s + 21ms));
}

TEST(ReadHistory, AProcessNoSampleFollowedIntoForTenSecondsIsNoLongerFollowed) {
  // Followed into once; then only its own samples read it (they keep their reads while it is
  // followed, for the followers).
  ReadHistory history;
  history.keep(process(20, 200, {blocked(20, 20, 10, 3)}), kT0, kT0 + 10ms, kFollower);
  for (int i = 1; i <= 10; ++i) {
    const auto at = kT0 + std::chrono::seconds(i);
    EXPECT_TRUE(history.followed(Pid{20}, at)) << i;
    history.keep(process(20, 200, {blocked(20, 20, 10, 3)}), at, at + 10ms, kItself);
  }
  EXPECT_FALSE(history.followed(Pid{20}, kT0 + 11s));
  // A follower asks for it again, and finds it.
  ASSERT_TRUE(history.recent(Pid{20}, kT0 + 10s, kT0 + 11s).has_value());
  EXPECT_TRUE(history.followed(Pid{20}, kT0 + 11s));
  // Another process under its pid was never followed into.
  history.keep(process(20, 999, {}), kT0 + 12s, kT0 + 12s, kItself);
  EXPECT_FALSE(history.followed(Pid{20}, kT0 + 12s));
}

}  // namespace
}  // namespace wctmon::linux_platform
