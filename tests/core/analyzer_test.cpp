#include "core/analyzer.h"

#include <gtest/gtest.h>

#include "core/run_loop.h"
#include "core/snapshot_builder.h"
#include "fakes/fake_wait_chain_source.h"

namespace wctmon {
namespace {

using testing::FakeThreadInspector;
using testing::FakeWaitChainSource;
using testing::SnapshotBuilder;
using testing::T;

Snapshot abba(std::uint64_t switches_a, std::uint64_t switches_b) {
  return testing::abbaSnapshot("demo", switches_a, switches_b);
}

/// Runs one analysis through a session of `source` to its completion, as the one-shot command
/// does: every step on the caller's executor.
Result<AnalysisResult> analyze(FakeWaitChainSource& source, ThreadInspector* inspector, Pid pid,
                               AnalyzeOptions options) {
  RunLoop loop;
  std::shared_ptr<WaitChainSession> session = std::move(source.open(pid)).value();
  std::optional<Result<AnalysisResult>> out;
  WaitChainAnalyzer(inspector).asyncAnalyze(session, std::move(options), loop.executor(),
                                            [&](Result<Analysis> a) {
                                              if (a) {
                                                out.emplace(std::move(a->result));
                                              } else {
                                                out.emplace(a.error());
                                              }
                                            });
  EXPECT_FALSE(out.has_value()) << "completions run on the executor, never inline";
  loop.run();
  if (!out) return makeError(ErrorCode::kInternal, "the analysis never completed");
  return std::move(*out);
}

TEST(Analyzer, ACycleSeenTwiceUnchangedIsConfirmedAndCaptured) {
  FakeWaitChainSource source;
  FakeThreadInspector inspector;
  source.setSample(abba(5, 7));
  source.queueResample(abba(5, 7));
  auto result = analyze(source, &inspector, Pid{10}, AnalyzeOptions{.capture = true});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->deadlocks.size(), 1U);
  EXPECT_EQ(source.resampleCalls(), 1);
  EXPECT_EQ(inspector.requested, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  EXPECT_EQ(result->captures.size(), 2U);
  EXPECT_EQ(result->pid, Pid{10});
  EXPECT_EQ(result->process_name, "demo");
  EXPECT_EQ(result->thread_count, 3U);
  EXPECT_EQ(result->chains.size(), 3U);
}

TEST(Analyzer, TheOtherProcessesReadComeWithTheirIdentitiesAndTitles) {
  // A cycle across two processes: the monitor takes the second one's identity from here.
  FakeWaitChainSource source;
  auto s = SnapshotBuilder()
               .process(10, "client")
               .waitsOnThread(11, T(20, 21))
               .switches(1)
               .process(20, "postgres")
               .waitsOnThread(21, T(10, 11))
               .switches(1)
               .build();
  s.processes[1].start_time = 4242;
  s.processes[1].title = "postgres: app db [local] UPDATE waiting";
  source.setSample(s);
  source.queueResample(s);
  auto result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{.out_of_proc = true});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->deadlocks.size(), 1U);
  EXPECT_EQ(result->other_processes,
            (std::vector<ProcessSeen>{
                {Pid{20}, 4242, "postgres", "postgres: app db [local] UPDATE waiting"}}));
}

TEST(Analyzer, ACycleThePlatformSeesAndTheGraphDoesNotIsSaid) {
  // WCT says threads 11 and 12 close a cycle; the graph agrees: nothing to say.
  auto agreed = abba(5, 7);
  agreed.processes[0].threads[0].platform_cycle = true;
  agreed.processes[0].threads[1].platform_cycle = true;
  FakeWaitChainSource source;
  source.setSample(agreed);
  source.queueResample(agreed);
  auto result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->deadlocks.size(), 1U);
  EXPECT_TRUE(result->warnings.empty()) << result->warnings.front();

  // WCT says thread 13 is in a cycle, which no wait of this snapshot closes.
  auto differing = abba(5, 7);
  differing.processes[0].threads[2].platform_cycle = true;
  source.setSample(differing);
  source.clearResamples();
  source.queueResample(differing);
  result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->deadlocks.size(), 1U);
  ASSERT_EQ(result->warnings.size(), 1U);
  EXPECT_NE(result->warnings[0].find("cycle through thread(s) 13 that is not a deadlock"),
            std::string::npos)
      << result->warnings[0];
}

TEST(Analyzer, ACycleWhoseThreadsRanBetweenReadsIsNotReported) {
  FakeWaitChainSource source;
  FakeThreadInspector inspector;
  source.setSample(abba(5, 7));
  // Every re-read shows thread 11 scheduled again: it was never stuck.
  for (std::uint64_t i = 1; i <= 10; ++i) source.queueResample(abba(5 + i, 7));
  auto result = analyze(source, &inspector, Pid{10}, AnalyzeOptions{.capture = true});
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->deadlocks.empty());
  EXPECT_TRUE(inspector.requested.empty());
  EXPECT_EQ(source.resampleCalls(), AnalyzeOptions{}.confirm_attempts);
  ASSERT_FALSE(result->warnings.empty());
}

TEST(Analyzer, ACycleThatDissolvesOnTheSecondReadIsGone) {
  FakeWaitChainSource source;
  source.setSample(abba(5, 7));
  source.queueResample(SnapshotBuilder()
                           .process(10, "demo")
                           .running(11)
                           .waitsOnThread(12, T(10, 11))
                           .switches(7)
                           .build());
  auto result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{});
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->deadlocks.empty());
  EXPECT_TRUE(result->warnings.empty());
}

TEST(Analyzer, ACycleConfirmedAfterOneMoveIsReported) {
  FakeWaitChainSource source;
  source.setSample(abba(5, 7));
  source.queueResample(abba(6, 7));  // moved once (a spurious wake-up), then settled
  source.queueResample(abba(6, 7));
  auto result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->deadlocks.size(), 1U);
  EXPECT_EQ(source.resampleCalls(), 2);
}

TEST(Analyzer, NoCaptureWithoutADeadlockOrWithoutTheOption) {
  FakeWaitChainSource source;
  FakeThreadInspector inspector;
  source.setSample(SnapshotBuilder().process(10).ownerless(11).build());
  ASSERT_TRUE(analyze(source, &inspector, Pid{10}, AnalyzeOptions{.capture = true}).ok());
  EXPECT_TRUE(inspector.requested.empty());

  source.setSample(abba(1, 1));
  source.queueResample(abba(1, 1));
  auto result = analyze(source, &inspector, Pid{10}, AnalyzeOptions{.capture = false});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->deadlocks.size(), 1U);
  EXPECT_TRUE(inspector.requested.empty());
}

TEST(Analyzer, SourceErrorsComeBackAsErrors) {
  FakeWaitChainSource source;
  source.setSample(makeError(ErrorCode::kNoSuchProcess, "no such process: 42"));
  auto result = analyze(source, nullptr, Pid{42},
                        AnalyzeOptions{.out_of_proc = true, .wct = WctFlags{.com = false}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_TRUE(source.lastScope().out_of_proc);
  EXPECT_EQ(source.lastScope().wct, WctFlags{.com = false});
}

/// Process 10 with two ABBA cycles: 11 <-> 12 and 21 <-> 22, with the given run counts for 21.
Snapshot twoCycles(std::uint64_t switches_21) {
  return SnapshotBuilder()
      .process(10, "demo")
      .waitsOnThread(11, T(10, 12))
      .switches(1)
      .waitsOnThread(12, T(10, 11))
      .switches(1)
      .waitsOnThread(21, T(10, 22))
      .switches(switches_21)
      .waitsOnThread(22, T(10, 21))
      .switches(1)
      .build();
}

TEST(Analyzer, ACycleThatKeepsChangingDoesNotDiscardAConfirmedOne) {
  FakeWaitChainSource source;
  source.setSample(twoCycles(1));
  // Thread 21 runs between every two reads; 11 and 12 never move.
  for (std::uint64_t i = 2; i < 12; ++i) source.queueResample(twoCycles(i));
  auto result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->deadlocks.size(), 1U);
  EXPECT_EQ(result->deadlocks[0].threads, (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  // Every cycle mark is a reported deadlock: the unconfirmed loop has none.
  for (const auto& c : result->chains) {
    const bool in_confirmed = c.start == T(10, 11) || c.start == T(10, 12);
    EXPECT_EQ(c.is_cycle, in_confirmed) << c.start.tid.value;
  }
  EXPECT_FALSE(result->warnings.empty());
}

TEST(Analyzer, WaitTimesAreAskedForBlockedThreadsOfReportedChainsOnly) {
  FakeWaitChainSource source;
  source.setSample(abba(5, 7));
  source.queueResample(abba(5, 7));
  source.setWaitTime(T(10, 11), std::chrono::milliseconds(2500));
  auto result = analyze(source, nullptr, Pid{10}, AnalyzeOptions{});
  ASSERT_TRUE(result.ok());
  // Thread 13 idles in an ownerless wait: its chain is not reported, so it is not asked for.
  EXPECT_EQ(source.waitTimeRequests(), (std::vector<ThreadRef>{T(10, 11), T(10, 12)}));
  for (const auto& c : result->chains) {
    for (const auto& n : c.nodes) {
      if (!n.isThread()) continue;
      if (n.thread == T(10, 11)) {
        EXPECT_EQ(n.wait_time, std::chrono::milliseconds(2500));
      } else {
        EXPECT_FALSE(n.wait_time.has_value()) << "never a made-up 0";
      }
    }
  }
}

/// Starts an analysis of pid 10 that captures, recording how it ends (kInternal: it succeeded).
WaitChainAnalyzer::Cancel startCapturing(FakeWaitChainSource& source,
                                         FakeThreadInspector& inspector, RunLoop& loop,
                                         std::vector<ErrorCode>& codes) {
  std::shared_ptr<WaitChainSession> session = std::move(source.open(Pid{10})).value();
  return WaitChainAnalyzer(&inspector)
      .asyncAnalyze(session, AnalyzeOptions{.capture = true}, loop.executor(),
                    [&codes](Result<Analysis> a) {
                      codes.push_back(a ? ErrorCode::kInternal : a.error().code);
                    });
}

TEST(Analyzer, ACancelledAnalysisEndsAtItsNextStepWithoutReReadOrCapture) {
  FakeWaitChainSource source;
  FakeThreadInspector inspector;
  source.setSample(abba(5, 7));
  source.queueResample(abba(5, 7));
  RunLoop loop;
  std::vector<ErrorCode> codes;
  const auto cancel = startCapturing(source, inspector, loop, codes);
  cancel();  // the sample's completion is queued, not yet seen: the analysis stops there
  loop.run();
  ASSERT_EQ(codes, std::vector<ErrorCode>{ErrorCode::kCancelled});
  EXPECT_EQ(source.resampleCalls(), 0);
  EXPECT_TRUE(inspector.requested.empty());
  cancel();  // once completed, nothing more happens
  loop.run();
  EXPECT_EQ(codes.size(), 1U);
}

TEST(Analyzer, ACancelledAnalysisWhoseReadIsStuckEndsAtOnceAndCapturesNothing) {
  FakeWaitChainSource source;
  FakeThreadInspector inspector;
  source.setSample(abba(5, 7));
  source.holdSamples();
  RunLoop loop;
  std::vector<ErrorCode> codes;
  const auto cancel = startCapturing(source, inspector, loop, codes);
  loop.run();
  EXPECT_TRUE(codes.empty());
  cancel();
  loop.run();
  ASSERT_EQ(codes, std::vector<ErrorCode>{ErrorCode::kCancelled});
  source.release();  // the read ends late: its result is dropped
  loop.run();
  EXPECT_EQ(codes.size(), 1U);
  EXPECT_TRUE(inspector.requested.empty());
}

TEST(Analyzer, ACancelledSampleCompletesAtOnceAndTheSessionIsBusyUntilTheWorkEnds) {
  FakeWaitChainSource source;
  source.setSample(abba(5, 7));
  source.holdSamples();  // the platform's read is stuck
  RunLoop loop;
  std::shared_ptr<WaitChainSession> session = std::move(source.open(Pid{10})).value();
  std::vector<ErrorCode> codes;
  const auto record = [&](Result<Analysis> a) {
    codes.push_back(a ? ErrorCode::kInternal : a.error().code);
  };
  WaitChainAnalyzer analyzer(nullptr);
  analyzer.asyncAnalyze(session, AnalyzeOptions{}, loop.executor(), record);
  loop.run();
  EXPECT_TRUE(codes.empty());  // still reading
  session->cancel();
  loop.run();
  ASSERT_EQ(codes, std::vector<ErrorCode>{ErrorCode::kCancelled});

  // The stuck read has not ended: the next sample is refused rather than queued behind it.
  analyzer.asyncAnalyze(session, AnalyzeOptions{}, loop.executor(), record);
  loop.run();
  ASSERT_EQ(codes, (std::vector<ErrorCode>{ErrorCode::kCancelled, ErrorCode::kBusy}));

  // When it ends, its result is dropped (the operation was cancelled) and the session is free.
  source.release();
  loop.run();
  EXPECT_EQ(codes.size(), 2U);
  source.queueResample(abba(5, 7));
  std::optional<Result<Analysis>> last;
  analyzer.asyncAnalyze(session, AnalyzeOptions{}, loop.executor(),
                        [&](Result<Analysis> a) { last.emplace(std::move(a)); });
  loop.run();
  ASSERT_TRUE(last.has_value() && last->ok());
  EXPECT_EQ((*last)->result.deadlocks.size(), 1U);
  EXPECT_EQ((*last)->threads.size(), 3U);  // the threads as read, for the service's history
}

}  // namespace
}  // namespace wctmon
