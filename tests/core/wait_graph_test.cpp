#include "core/wait_graph.h"

#include <gtest/gtest.h>

#include "core/snapshot_builder.h"

namespace wctmon {
namespace {

using testing::SnapshotBuilder;
using testing::T;

GraphAnalysis analyze(const Snapshot& s, std::vector<Pid> roots, GraphOptions options = {}) {
  return analyzeWaitGraph(s, roots, options);
}

const WaitChain& chainOf(const GraphAnalysis& g, ThreadRef t) {
  for (const auto& c : g.chains) {
    if (c.start == t) return c;
  }
  throw std::runtime_error("no chain");
}

TEST(WaitGraph, AbbaIsOneDeadlockWithItsSpur) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(10, T(10, 11), ObjectType::kThreadWait)  // main joins a
                     .waitsOnThread(11, T(10, 12))
                     .waitsOnThread(12, T(10, 11))
                     .running(13)
                     .build();
  const auto g = analyze(s, {Pid{10}});
  ASSERT_EQ(g.deadlocks.size(), 1U);
  EXPECT_EQ(g.deadlocks[0].threads, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  EXPECT_EQ(g.deadlocks[0].spurs, (std::vector<ThreadRef>{T(10, 10)}));
  EXPECT_FALSE(g.deadlocks[0].crossProcess());
  ASSERT_EQ(g.chains.size(), 4U);

  const auto& a = chainOf(g, T(10, 11));
  EXPECT_TRUE(a.is_cycle);
  ASSERT_EQ(a.nodes.size(), 5U);  // a -> m -> b -> m -> a
  EXPECT_EQ(a.nodes[0].thread, T(10, 11));
  EXPECT_EQ(a.nodes[1].type, ObjectType::kMutex);
  EXPECT_EQ(a.nodes[2].thread, T(10, 12));
  EXPECT_EQ(a.nodes[4].thread, T(10, 11));
  EXPECT_EQ(a.node_count, 5U);
  EXPECT_FALSE(a.truncated);

  const auto& spur = chainOf(g, T(10, 10));
  EXPECT_TRUE(spur.is_cycle);
  EXPECT_EQ(spur.nodes[1].type, ObjectType::kThreadWait);

  const auto& running = chainOf(g, T(10, 13));
  EXPECT_FALSE(running.is_cycle);
  ASSERT_EQ(running.nodes.size(), 1U);
  EXPECT_EQ(running.nodes[0].status, ObjectStatus::kRunning);
}

TEST(WaitGraph, SelfDeadlockIsACycleOfOne) {
  const auto s = SnapshotBuilder().process(10).waitsOnThread(11, T(10, 11)).build();
  const auto g = analyze(s, {Pid{10}});
  ASSERT_EQ(g.deadlocks.size(), 1U);
  EXPECT_EQ(g.deadlocks[0].threads, (std::vector<ThreadRef>{T(10, 11)}));
  EXPECT_TRUE(g.chains[0].is_cycle);
  EXPECT_EQ(g.chains[0].nodes.size(), 3U);
}

TEST(WaitGraph, ChainEndingInAnOwnerlessWaitIsNoDeadlock) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(11, T(10, 12))
                     .waitsOnThread(12, T(10, 13))
                     .ownerless(13)
                     .build();
  const auto g = analyze(s, {Pid{10}});
  EXPECT_TRUE(g.deadlocks.empty());
  const auto& c = chainOf(g, T(10, 11));
  EXPECT_FALSE(c.is_cycle);
  ASSERT_EQ(c.nodes.size(), 6U);
  EXPECT_EQ(c.nodes.back().type, ObjectType::kFutex);
  EXPECT_EQ(c.nodes.back().status, ObjectStatus::kBlocked);
}

TEST(WaitGraph, AbandonedAndUnknownOwnersEndTheChain) {
  auto b = SnapshotBuilder().process(10).waitsOnThread(11, T(10, 99));
  auto s = b.build();
  s.processes[0].threads[0].wait->status = ObjectStatus::kAbandoned;
  s.processes[0].threads[0].wait->owner_threads.clear();
  const auto g = analyze(s, {Pid{10}});
  EXPECT_TRUE(g.deadlocks.empty());
  EXPECT_EQ(g.chains[0].nodes.size(), 2U);
  EXPECT_EQ(g.chains[0].nodes[1].status, ObjectStatus::kAbandoned);
}

TEST(WaitGraph, ChainIsTruncatedAtTheNodeLimitButCountsTheWholeChain) {
  SnapshotBuilder b;
  b.process(10);
  for (int i = 0; i < 40; ++i) b.waitsOnThread(100 + i, T(10, 101 + i));
  b.ownerless(140);
  const auto s = b.build();
  const auto g = analyze(s, {Pid{10}}, GraphOptions{.max_nodes = 16});
  const auto& c = chainOf(g, T(10, 100));
  EXPECT_TRUE(c.truncated);
  EXPECT_EQ(c.nodes.size(), 16U);
  EXPECT_EQ(c.node_count, 82U);  // 41 threads, 41 objects
  EXPECT_TRUE(g.deadlocks.empty());
  const auto full = analyze(s, {Pid{10}});
  EXPECT_TRUE(chainOf(full, T(10, 100)).truncated);  // the default limit is 64
  EXPECT_EQ(chainOf(full, T(10, 100)).nodes.size(), 64U);
  EXPECT_TRUE(
      chainOf(analyze(s, {Pid{10}}, GraphOptions{.max_nodes = 100}), T(10, 100)).nodes.size() ==
      82U);
}

TEST(WaitGraph, WithoutOutOfProcAChainStopsAtTheFirstForeignThread) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(11, T(20, 21))
                     .process(20)
                     .waitsOnThread(21, T(10, 11))
                     .build();
  const auto inproc = analyze(s, {Pid{10}});
  const auto& c = chainOf(inproc, T(10, 11));
  ASSERT_EQ(c.nodes.size(), 3U);
  EXPECT_EQ(c.nodes[2].thread, T(20, 21));
  EXPECT_EQ(c.nodes[2].status, ObjectStatus::kPidOnly);
  EXPECT_FALSE(c.is_cycle);

  const auto outproc = analyze(s, {Pid{10}}, GraphOptions{.out_of_proc = true});
  EXPECT_TRUE(chainOf(outproc, T(10, 11)).is_cycle);
  ASSERT_EQ(outproc.deadlocks.size(), 1U);
  EXPECT_TRUE(outproc.deadlocks[0].crossProcess());
  EXPECT_EQ(outproc.chains.size(), 1U);  // chains only for the process asked for
}

TEST(WaitGraph, ProcessOwnedObjectsAreStuckOnlyWhenEveryThreadOfTheOwnerIs) {
  // Parent 10 writes a pipe read by 20; 20 writes a pipe read by 10.
  const auto stuck = SnapshotBuilder()
                         .process(10)
                         .waitsOnProcesses(10, {20})
                         .process(20)
                         .waitsOnProcesses(20, {10})
                         .build();
  auto g = analyze(stuck, {Pid{10}}, GraphOptions{.out_of_proc = true});
  ASSERT_EQ(g.deadlocks.size(), 1U);
  EXPECT_EQ(g.deadlocks[0].threads, (std::vector<ThreadRef>{T(10, 10), T(20, 20)}));

  // A thread of 20 that may still run could write: no deadlock.
  const auto live = SnapshotBuilder()
                        .process(10)
                        .waitsOnProcesses(10, {20})
                        .process(20)
                        .waitsOnProcesses(20, {10})
                        .ownerless(21)
                        .build();
  g = analyze(live, {Pid{10}}, GraphOptions{.out_of_proc = true});
  EXPECT_TRUE(g.deadlocks.empty());
}

TEST(WaitGraph, AReaderHoldingTheOnlyWriteEndOfItsPipeIsACycleOfOne) {
  const auto s = SnapshotBuilder().process(10).waitsOnProcesses(10, {10}).build();
  const auto g = analyze(s, {Pid{10}});
  ASSERT_EQ(g.deadlocks.size(), 1U);
  EXPECT_EQ(g.deadlocks[0].threads, (std::vector<ThreadRef>{T(10, 10)}));
}

TEST(WaitGraph, OwnersOutsideTheSnapshotMayProgress) {
  const auto s = SnapshotBuilder().process(10).waitsOnProcesses(10, {99}).build();
  EXPECT_TRUE(analyze(s, {Pid{10}}, GraphOptions{.out_of_proc = true}).deadlocks.empty());
}

TEST(WaitGraph, TwoSeparateCyclesAreTwoDeadlocks) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(1, T(10, 2))
                     .waitsOnThread(2, T(10, 1))
                     .waitsOnThread(3, T(10, 4))
                     .waitsOnThread(4, T(10, 3))
                     .waitsOnThread(5, T(10, 3))
                     .build();
  const auto g = analyze(s, {Pid{10}});
  ASSERT_EQ(g.deadlocks.size(), 2U);
  EXPECT_EQ(g.deadlocks[0].threads, (std::vector<ThreadRef>{T(10, 1), T(10, 2)}));
  EXPECT_TRUE(g.deadlocks[0].spurs.empty());
  EXPECT_EQ(g.deadlocks[1].threads, (std::vector<ThreadRef>{T(10, 3), T(10, 4)}));
  EXPECT_EQ(g.deadlocks[1].spurs, (std::vector<ThreadRef>{T(10, 5)}));
}

TEST(WaitGraph, DeadlocksNotTouchingTheRootsAreLeftOut) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .running(10)
                     .process(20)
                     .waitsOnThread(21, T(20, 22))
                     .waitsOnThread(22, T(20, 21))
                     .build();
  EXPECT_TRUE(analyze(s, {Pid{10}}, GraphOptions{.out_of_proc = true}).deadlocks.empty());
  EXPECT_EQ(analyze(s, {Pid{10}, Pid{20}}, GraphOptions{.out_of_proc = true}).deadlocks.size(), 1U);
}

TEST(WaitGraph, LongCycleIsFoundWithoutRecursionLimits) {
  SnapshotBuilder b;
  b.process(10);
  constexpr int kLength = 20000;
  for (int i = 0; i < kLength; ++i) b.waitsOnThread(i + 1, T(10, (i + 1) % kLength + 1));
  const auto g = analyze(b.build(), {Pid{10}}, GraphOptions{.max_nodes = 8});
  ASSERT_EQ(g.deadlocks.size(), 1U);
  EXPECT_EQ(g.deadlocks[0].threads.size(), static_cast<std::size_t>(kLength));
}

TEST(WaitGraph, ARingTooLongToShowIsWalkedOnceAndEveryOtherChainEndsAtIt) {
  // A ring of 1,000 threads and a spur into it: one chain (its first thread's) walks the ring up
  // to the node limit; every other ends at the first ring thread it meets, so that the chains
  // cost O(n) nodes, not n times the limit.
  SnapshotBuilder b;
  b.process(10);
  constexpr int kLength = 1000;
  for (int i = 0; i < kLength; ++i) b.waitsOnThread(i + 1, T(10, (i + 1) % kLength + 1));
  b.waitsOnThread(5000, T(10, 500));
  const auto g = analyze(b.build(), {Pid{10}}, GraphOptions{.max_nodes = 64});
  ASSERT_EQ(g.deadlocks.size(), 1U);
  EXPECT_EQ(g.deadlocks[0].spurs, (std::vector<ThreadRef>{T(10, 5000)}));
  ASSERT_EQ(g.chains.size(), static_cast<std::size_t>(kLength + 1));
  std::size_t nodes = 0;
  for (const auto& c : g.chains) {
    nodes += c.nodes.size();
    EXPECT_TRUE(c.truncated);
    EXPECT_FALSE(c.is_cycle);
  }
  EXPECT_EQ(nodes, 64U + 3U * (kLength - 1) + 3U);

  const auto& first = chainOf(g, T(10, 1));
  ASSERT_EQ(first.nodes.size(), 64U);
  EXPECT_EQ(first.nodes[62].thread, T(10, 32));
  EXPECT_EQ(first.node_count, 2U * kLength + 1);

  const auto& member = chainOf(g, T(10, 7));
  ASSERT_EQ(member.nodes.size(), 3U);
  EXPECT_EQ(member.nodes[2].thread, T(10, 8));
  EXPECT_EQ(member.node_count, 2U * kLength + 1);

  const auto& spur = chainOf(g, T(10, 5000));
  ASSERT_EQ(spur.nodes.size(), 3U);
  EXPECT_EQ(spur.nodes[2].thread, T(10, 500));
  EXPECT_EQ(spur.node_count, 2U * kLength + 3);

  // A cycle short enough to show whole is still shown whole from each of its threads.
  SnapshotBuilder small;
  small.process(10);
  for (int i = 0; i < 31; ++i) small.waitsOnThread(i + 1, T(10, (i + 1) % 31 + 1));
  for (const auto& c : analyze(small.build(), {Pid{10}}, GraphOptions{.max_nodes = 64}).chains) {
    EXPECT_EQ(c.nodes.size(), 63U);
    EXPECT_TRUE(c.is_cycle);
  }
}

TEST(WaitGraph, ACycleClosedByAWaitThatTimesOutBeforeTheBoundIsNoDeadlock) {
  using std::chrono::milliseconds;
  const auto cycle = [](milliseconds left) {
    return SnapshotBuilder()
        .process(10)
        .waitsOnThread(11, T(10, 12))
        .waitsOnThread(12, T(10, 11))
        .timeout(left)
        .build();
  };
  const GraphOptions options{.timed_wait_bound = milliseconds(30000)};
  const auto backoff = analyze(cycle(milliseconds(300)), {Pid{10}}, options);
  EXPECT_TRUE(backoff.deadlocks.empty());
  for (const auto& c : backoff.chains) EXPECT_FALSE(c.is_cycle);
  // The loop is still shown: it closes, without a cycle mark.
  EXPECT_EQ(chainOf(backoff, T(10, 11)).nodes.back().thread, T(10, 11));

  const auto hour = analyze(cycle(std::chrono::hours(1)), {Pid{10}}, options);
  ASSERT_EQ(hour.deadlocks.size(), 1U);
  EXPECT_TRUE(chainOf(hour, T(10, 11)).is_cycle);
  EXPECT_EQ(chainOf(hour, T(10, 12)).nodes[1].timeout, std::chrono::hours(1));
}

TEST(WaitGraph, AStoppedThreadIsNeverStuck) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(11, T(10, 12))
                     .waitsOnThread(12, T(10, 11))
                     .stopped()
                     .build();
  const auto g = analyze(s, {Pid{10}});
  EXPECT_TRUE(g.deadlocks.empty());
  for (const auto& c : g.chains) EXPECT_FALSE(c.is_cycle);
}

TEST(WaitGraph, AWaitHeldByAProcessIsFollowedOnlyIntoAStuckThread) {
  // Thread 11 reads a pipe its own process holds; thread 12 of that process sleeps and could
  // write. The chain must not pick a thread (the lowest is 11, the waiter itself): it ends at
  // the pipe and names what the holder's threads do.
  const auto s = SnapshotBuilder()
                     .process(10, "python3")
                     .waitsOnProcesses(11, {10})
                     .ownerless(12, ObjectType::kSleep)
                     .build();
  const auto g = analyze(s, {Pid{10}});
  EXPECT_TRUE(g.deadlocks.empty());
  const auto& c = chainOf(g, T(10, 11));
  EXPECT_FALSE(c.is_cycle);
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].detail,
            "holder 10 (python3): 2 threads, 1 blocked on Pipe, 1 blocked on Sleep");

  // With every thread of the holder stuck, the chain goes on into one of them: a deadlock.
  const auto stuck = SnapshotBuilder()
                         .process(10, "python3")
                         .waitsOnProcesses(11, {10})
                         .waitsOnThread(12, T(10, 11))
                         .build();
  const auto g2 = analyze(stuck, {Pid{10}});
  ASSERT_EQ(g2.deadlocks.size(), 1U);
  EXPECT_TRUE(chainOf(g2, T(10, 11)).is_cycle);
}

TEST(WaitGraph, ATruncatedChainIsNeverMarkedACycle) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(11, T(10, 12))
                     .waitsOnThread(12, T(10, 11))
                     .build();
  for (std::uint32_t max_nodes = 1; max_nodes < 5; ++max_nodes) {
    const auto g = analyze(s, {Pid{10}}, GraphOptions{.max_nodes = max_nodes});
    const auto& c = chainOf(g, T(10, 11));
    EXPECT_TRUE(c.truncated) << max_nodes;
    EXPECT_FALSE(c.is_cycle) << max_nodes;
    EXPECT_EQ(c.node_count, 5U);
  }
  EXPECT_TRUE(chainOf(analyze(s, {Pid{10}}, GraphOptions{.max_nodes = 5}), T(10, 11)).is_cycle);
}

TEST(WaitGraph, ChainsLeadSomewhereWhenTheyGoPastAnOwnedObject) {
  const auto s = SnapshotBuilder()
                     .process(10)
                     .waitsOnThread(11, T(10, 12))
                     .ownerless(12)
                     .ownerless(13, ObjectType::kKernelWait)
                     .running(14)
                     .build();
  const auto g = analyze(s, {Pid{10}});
  EXPECT_TRUE(leadsSomewhere(chainOf(g, T(10, 11))));
  EXPECT_FALSE(leadsSomewhere(chainOf(g, T(10, 12))));
  EXPECT_TRUE(leadsSomewhere(chainOf(g, T(10, 13))));
  EXPECT_FALSE(leadsSomewhere(chainOf(g, T(10, 14))));
}

TEST(SameBlockedWait, TheTimeLeftOfATimedWaitIsNotPartOfTheWait) {
  auto before = SnapshotBuilder()
                    .process(10)
                    .waitsOnThread(11, T(10, 12))
                    .timeout(std::chrono::milliseconds(900))
                    .switches(3)
                    .build();
  auto after = before;
  after.processes[0].threads[0].wait->timeout = std::chrono::milliseconds(400);
  EXPECT_TRUE(sameBlockedWait(before.processes[0].threads[0], after.processes[0].threads[0]));
  after.processes[0].threads[0].wait->key = 99;
  EXPECT_FALSE(sameBlockedWait(before.processes[0].threads[0], after.processes[0].threads[0]));
}

}  // namespace
}  // namespace wctmon
