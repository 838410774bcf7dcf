// The WCT source against a scripted WCT at its API boundary (Wine's own WCT refuses to open a
// session): every documented outcome of GetThreadWaitChain, results delivered asynchronously on
// a thread of the script's own as WCT does, a cancellation in flight, and the real WCT of the
// system this runs on (under Wine: not supported, said so, and only the threads and their CPU
// time read).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "core/analyzer.h"
#include "platform/windows/ntdll.h"
#include "platform/windows/scripted_wct.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/wct_wait_chain_source.h"
#include "support/thread_executor.h"

namespace wctmon::windows_platform {
namespace {

using namespace std::chrono_literals;
using wctmon::testing::ThreadExecutor;

using namespace scripted;

class WctSourceTest : public ::testing::Test {
 protected:
  WctSourceTest()
      : wct_(std::make_shared<ScriptedWct>()),
        source_(work_.executor(), wct_, [this](Pid pid) -> Result<ProcessThreads> {
          if (pid.value != static_cast<std::int32_t>(kPid)) {
            return makeError(ErrorCode::kNoSuchProcess, "no such process");
          }
          return process(tids_);
        }) {}

  /// One sample through a fresh session, waited for (the result comes from other threads).
  Result<Snapshot> sample(bool out_of_proc = false, bool threads_alone = false) {
    auto session = std::move(source_.open(Pid{static_cast<std::int32_t>(kPid)})).value();
    std::promise<Result<Snapshot>> done;
    session->asyncSample(SampleScope{.out_of_proc = out_of_proc, .threads_alone = threads_alone},
                         caller_.executor(), [&](Result<Snapshot> s) {
                           EXPECT_EQ(std::this_thread::get_id(), caller_.id())
                               << "completions run on the executor";
                           done.set_value(std::move(s));
                         });
    auto future = done.get_future();
    if (future.wait_for(10s) != std::future_status::ready) {
      return makeError(ErrorCode::kInternal, "the sample never completed");
    }
    return future.get();
  }

  ThreadExecutor work_;
  ThreadExecutor caller_;
  std::shared_ptr<ScriptedWct> wct_;
  std::vector<DWORD> tids_{11, 12, 13};
  WctWaitChainSource source_;
};

TEST_F(WctSourceTest, ADeadlockOnTwoCriticalSectionsIsFoundFromAsynchronousAnswers) {
  scriptAbba(*wct_);
  auto session = std::shared_ptr<WaitChainSession>(
      std::move(source_.open(Pid{static_cast<std::int32_t>(kPid)})).value());
  std::promise<Result<Analysis>> done;
  WaitChainAnalyzer analyzer(nullptr);
  (void)analyzer.asyncAnalyze(session, AnalyzeOptions{}, caller_.executor(),
                              [&](Result<Analysis> a) { done.set_value(std::move(a)); });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  auto analysis = future.get();
  ASSERT_TRUE(analysis.ok()) << analysis.error().message;
  ASSERT_EQ(analysis->result.deadlocks.size(), 1U);
  const std::vector<ThreadRef> cycle{ThreadRef{Pid{4242}, Tid{11}}, ThreadRef{Pid{4242}, Tid{12}}};
  EXPECT_EQ(analysis->result.deadlocks[0].threads, cycle);
  EXPECT_EQ(analysis->result.process_name, "demo.exe");
  EXPECT_EQ(analysis->result.thread_count, 3U);
  // A session per operation (the sample and the re-read that confirmed the cycle), each
  // closed; the answers came on the script's thread, not the caller's or the pool's.
  EXPECT_EQ(wct_->opened(), 2);
  EXPECT_EQ(wct_->closed(), 2);
  const auto threads = wct_->callbackThreads();
  EXPECT_EQ(threads.size(), 1U);
  EXPECT_FALSE(threads.contains(work_.id()));
  EXPECT_FALSE(threads.contains(caller_.id()));
  // Wait times come from the thread nodes.
  const auto times = session->waitTimes(cycle);
  ASSERT_EQ(times.size(), 2U);
  EXPECT_EQ(times[0], std::chrono::milliseconds(5000));
}

TEST_F(WctSourceTest, NodesBecomeTheThreadsWaitWithItsOwner) {
  wct_->answer(11, {.nodes = {threadNode(kPid, 11, WctStatusBlocked, 1500, 3),
                              lockNode(WctMutexType, WctStatusOwned, L"Global\\app-lock", 2000),
                              threadNode(kPid, 12, WctStatusRunning)}});
  wct_->answer(12, {.nodes = {threadNode(kPid, 12, WctStatusRunning)}});
  tids_ = {11, 12};
  auto s = sample();
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->processes.size(), 1U);
  const auto& p = s->processes[0];
  EXPECT_EQ(p.name, "demo.exe");
  EXPECT_EQ(p.start_time, 1234U);
  ASSERT_EQ(p.threads.size(), 2U);
  const auto& t = p.threads[0];
  EXPECT_EQ(t.status, ObjectStatus::kBlocked);
  EXPECT_EQ(t.context_switches, 3U);
  EXPECT_EQ(t.wait_time, std::chrono::milliseconds(1500));
  ASSERT_TRUE(t.wait.has_value());
  EXPECT_EQ(t.wait->type, ObjectType::kMutex);
  EXPECT_EQ(t.wait->status, ObjectStatus::kOwned);
  EXPECT_EQ(t.wait->name, "Global\\app-lock");
  EXPECT_EQ(t.wait->timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(t.wait->owner_threads, (std::vector<ThreadRef>{ThreadRef{Pid{4242}, Tid{12}}}));
  EXPECT_EQ(p.threads[1].status, ObjectStatus::kRunning);
  EXPECT_FALSE(p.threads[1].wait.has_value());
  EXPECT_EQ(wct_->lastFlags(), 0U);
  // Names from the thread list (GetThreadDescription), in its order.
  EXPECT_EQ(t.name, "main");
  EXPECT_EQ(p.threads[1].name, "");
}

TEST_F(WctSourceTest, OutOfProcessChainsAddTheOtherProcessesThreads) {
  wct_->answer(
      11, {.nodes = {threadNode(kPid, 11, WctStatusBlocked), lockNode(WctAlpcType, WctStatusOwned),
                     threadNode(77, 701, WctStatusBlocked),
                     lockNode(WctMutexType, WctStatusOwned, L"m"),
                     threadNode(kPid, 11, WctStatusBlocked)},
           .is_cycle = true});
  tids_ = {11};
  auto s = sample(true);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(wct_->lastFlags(),
            kWctOutOfProcFlag | kWctOutOfProcComFlag | kWctOutOfProcCsFlag | kWctNetworkIoFlag);
  ASSERT_EQ(s->processes.size(), 2U);
  EXPECT_TRUE(s->processes[0].threads[0].platform_cycle) << "WCT's IsCycle";
  EXPECT_EQ(s->processes[1].pid, Pid{77});
  ASSERT_EQ(s->processes[1].threads.size(), 1U);
  const auto& other = s->processes[1].threads[0];
  EXPECT_EQ(other.id, (ThreadRef{Pid{77}, Tid{701}}));
  ASSERT_TRUE(other.wait.has_value());
  EXPECT_EQ(other.wait->owner_threads, (std::vector<ThreadRef>{ThreadRef{Pid{4242}, Tid{11}}}));
}

TEST_F(WctSourceTest, TheTargetsFlagsReachEveryRequestOfItsSamplesAndReReads) {
  constexpr DWORD kAll =
      kWctOutOfProcFlag | kWctOutOfProcComFlag | kWctOutOfProcCsFlag | kWctNetworkIoFlag;
  EXPECT_EQ(wctFlagsOf({}), 0U);
  // The further flags go only with WCT_OUT_OF_PROC_FLAG.
  EXPECT_EQ(wctFlagsOf({.out_of_proc = false, .wct = WctFlags{}}), 0U);
  EXPECT_EQ(wctFlagsOf({.out_of_proc = true, .wct = WctFlags{}}), kAll);
  EXPECT_EQ(wctFlagsOf({.out_of_proc = true,
                        .wct = {.com = false, .critical_sections = true, .network_io = false}}),
            kWctOutOfProcFlag | kWctOutOfProcCsFlag);

  scriptAbba(*wct_);
  auto session = std::move(source_.open(Pid{static_cast<std::int32_t>(kPid)})).value();
  const auto sampleWith = [&](SampleScope scope) {
    std::promise<Result<Snapshot>> done;
    session->asyncSample(scope, caller_.executor(),
                         [&](Result<Snapshot> s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  };
  const auto reRead = [&] {
    std::promise<Result<std::vector<ThreadSample>>> done;
    session->asyncResample(
        {ThreadRef{Pid{static_cast<std::int32_t>(kPid)}, Tid{11}}}, caller_.executor(),
        [&](Result<std::vector<ThreadSample>> t) { done.set_value(std::move(t)); });
    return done.get_future().get();
  };
  const SampleScope some{.out_of_proc = true,
                         .wct = {.com = false, .critical_sections = false, .network_io = true}};
  ASSERT_TRUE(sampleWith(some).ok());
  EXPECT_EQ(wct_->lastFlags(), kWctOutOfProcFlag | kWctNetworkIoFlag);
  ASSERT_TRUE(reRead().ok());
  EXPECT_EQ(wct_->lastFlags(), kWctOutOfProcFlag | kWctNetworkIoFlag) << "as its sample";
  ASSERT_TRUE(sampleWith({}).ok());
  EXPECT_EQ(wct_->lastFlags(), 0U);
  ASSERT_TRUE(reRead().ok());
  EXPECT_EQ(wct_->lastFlags(), 0U);
}

TEST_F(WctSourceTest, AChainCutShortIsKeptAndSaidToBeCut) {
  auto nodes = std::vector<WAITCHAIN_NODE_INFO>{threadNode(kPid, 11, WctStatusBlocked),
                                                lockNode(WctMutexType, WctStatusOwned),
                                                threadNode(kPid, 12, WctStatusBlocked)};
  wct_->answer(11, {.status = ERROR_MORE_DATA, .nodes = nodes});
  wct_->answer(12,
               {.status = kErrorTooManyThreads, .nodes = {threadNode(kPid, 12, WctStatusBlocked)}});
  tids_ = {11, 12};
  auto s = sample();
  ASSERT_TRUE(s.ok()) << s.error().message;
  const auto& t = s->processes[0].threads[0];
  ASSERT_TRUE(t.wait.has_value());
  EXPECT_EQ(t.wait->owner_threads, (std::vector<ThreadRef>{ThreadRef{Pid{4242}, Tid{12}}}));
  ASSERT_EQ(s->warnings.size(), 2U);
  EXPECT_NE(s->warnings[0].find("cut at 3 nodes (ERROR_MORE_DATA)"), std::string::npos)
      << s->warnings[0];
  EXPECT_NE(s->warnings[1].find("ERROR_TOO_MANY_THREADS"), std::string::npos) << s->warnings[1];
}

TEST_F(WctSourceTest, EachFailureOfAThreadIsThatThreadsStatusNotTheSamples) {
  wct_->answer(11, failure(ERROR_ACCESS_DENIED));
  wct_->answer(12, failure(ERROR_OBJECT_NOT_FOUND));
  wct_->answer(13, failure(ERROR_INVALID_PARAMETER, true));
  wct_->answer(
      14, {.nodes = {threadNode(kPid, 14, WctStatusBlocked), lockNode(WctMutexType, WctStatusOwned),
                     threadNode(0, 0, WctStatusNoAccess)}});
  tids_ = {11, 12, 13, 14};
  auto s = sample();
  ASSERT_TRUE(s.ok()) << s.error().message;
  const auto& threads = s->processes[0].threads;
  ASSERT_EQ(threads.size(), 4U);
  EXPECT_EQ(threads[0].status, ObjectStatus::kNoAccess);
  EXPECT_TRUE(isExited(threads[1]));
  EXPECT_EQ(threads[2].status, ObjectStatus::kError);
  ASSERT_EQ(s->warnings.size(), 1U);
  EXPECT_NE(s->warnings[0].find("thread 13"), std::string::npos) << s->warnings[0];
  EXPECT_NE(s->warnings[0].find("ERROR_INVALID_PARAMETER"), std::string::npos);
  // Owned by something WCT may not look into: blocked, on an owner it cannot name.
  ASSERT_TRUE(threads[3].wait.has_value());
  EXPECT_EQ(threads[3].wait->status, ObjectStatus::kOwned);
  EXPECT_TRUE(threads[3].wait->owner_threads.empty());
}

TEST_F(WctSourceTest, AProcessThatIsGoneFailsItsSample) {
  auto session = std::move(source_.open(Pid{1})).value();
  std::promise<Result<Snapshot>> done;
  session->asyncSample({}, caller_.executor(),
                       [&](Result<Snapshot> s) { done.set_value(std::move(s)); });
  auto s = done.get_future().get();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_EQ(wct_->opened(), 0);
}

TEST_F(WctSourceTest, WhereWctIsNotSupportedAnAnalysisFailsClearlyAndASampleHasOnlyTheThreads) {
  wct_->refuseOpen(ERROR_NOT_SUPPORTED);
  const auto availability = source_.availability();
  EXPECT_EQ(availability.name, "windows-wct");
  EXPECT_FALSE(availability.available);
  EXPECT_NE(availability.reason.find("not supported"), std::string::npos) << availability.reason;
  scriptAbba(*wct_);
  // An analysis, or the sample of an incident: nothing without the waits.
  auto asked = sample();
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(asked.error().message.find("ERROR_NOT_SUPPORTED"), std::string::npos);
  // A periodic sample: the threads, with their names and CPU time, their waits unknown, and why.
  auto periodic = sample(false, true);
  ASSERT_TRUE(periodic.ok()) << periodic.error().message;
  ASSERT_EQ(periodic->processes.size(), 1U);
  const auto& p = periodic->processes[0];
  EXPECT_EQ(p.name, "demo.exe");
  EXPECT_EQ(p.start_time, 1234U);
  ASSERT_EQ(p.threads.size(), 3U);
  for (std::size_t i = 0; i < p.threads.size(); ++i) {
    const auto& t = p.threads[i];
    EXPECT_EQ(t.id.tid.value, static_cast<std::int32_t>(tids_[i]));
    EXPECT_EQ(t.status, ObjectStatus::kUnknown);
    EXPECT_FALSE(t.wait.has_value());
    EXPECT_EQ(t.cpu_time, std::chrono::milliseconds(100 * (i + 1)));
  }
  EXPECT_EQ(p.threads[0].name, "main");
  ASSERT_EQ(periodic->warnings.size(), 1U);
  EXPECT_NE(periodic->warnings[0].find("ERROR_NOT_SUPPORTED"), std::string::npos)
      << periodic->warnings[0];
  // Another refusal is no reason to go on without WCT: the sample fails.
  wct_->refuseOpen(ERROR_ACCESS_DENIED);
  auto denied = sample(false, true);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kInternal);
}

TEST_F(WctSourceTest, EachThreadCarriesTheCpuTimeItWasListedWith) {
  scriptAbba(*wct_);
  auto s = sample();
  ASSERT_TRUE(s.ok()) << s.error().message;
  const auto& threads = s->processes[0].threads;
  ASSERT_EQ(threads.size(), 3U);
  for (std::size_t i = 0; i < threads.size(); ++i) {
    EXPECT_EQ(threads[i].cpu_time, std::chrono::milliseconds(100 * (i + 1))) << i;
  }
}

TEST_F(WctSourceTest, ACancelledSampleAnswersAtOnceAndClosingTheSessionEndsItsRequests) {
  scriptAbba(*wct_);
  Answer held{.nodes = {threadNode(kPid, 13, WctStatusRunning)}, .hold = true};
  wct_->answer(13, held);
  auto session = std::move(source_.open(Pid{static_cast<std::int32_t>(kPid)})).value();
  std::promise<Result<Snapshot>> first;
  session->asyncSample({}, caller_.executor(),
                       [&](Result<Snapshot> s) { first.set_value(std::move(s)); });
  auto first_future = first.get_future();
  ASSERT_TRUE(wct_->waitHeld(1));
  EXPECT_EQ(first_future.wait_for(100ms), std::future_status::timeout);  // 13 is pending
  session->cancel();
  ASSERT_EQ(first_future.wait_for(5s), std::future_status::ready);
  auto cancelled = first_future.get();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error().code, ErrorCode::kCancelled);
  // The session was closed; its pending request ended with ERROR_CANCELLED and the slot is
  // free again: the next sample works.
  for (int i = 0; i < 100 && wct_->closed() < 1; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(wct_->closed(), 1);
  wct_->answer(13, {.nodes = {threadNode(kPid, 13, WctStatusRunning)}});
  Result<Snapshot> next = makeError(ErrorCode::kInternal, "not run");
  for (int i = 0; i < 100; ++i) {
    std::promise<Result<Snapshot>> again;
    session->asyncSample({}, caller_.executor(),
                         [&](Result<Snapshot> s) { again.set_value(std::move(s)); });
    next = again.get_future().get();
    if (next.ok() || next.error().code != ErrorCode::kBusy) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->processes[0].threads.size(), 3U);
}

TEST(WctSystem, TheSystemsWctIsAskedAndItsAnswerReported) {
  ThreadExecutor work;
  ThreadExecutor caller;
  WctWaitChainSource source(work.executor(), makeSystemWctApi(), listProcessThreads);
  const auto availability = source.availability();
  auto session =
      std::move(source.open(Pid{static_cast<std::int32_t>(::GetCurrentProcessId())})).value();
  std::promise<Result<Snapshot>> done;
  session->asyncSample(SampleScope{.threads_alone = true}, caller.executor(),
                       [&](Result<Snapshot> s) { done.set_value(std::move(s)); });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(20s), std::future_status::ready);
  auto s = future.get();
  // On a real Windows our own threads, this one among them, with their waits; on Wine, where
  // OpenThreadWaitChainSession is a stub that answers ERROR_NOT_SUPPORTED, the same threads
  // without them. Either way with the CPU time each has used.
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_GE(s->processes[0].threads.size(), 3U);
  const auto self = std::find_if(
      s->processes[0].threads.begin(), s->processes[0].threads.end(), [](const ThreadSample& t) {
        return t.id.tid.value == static_cast<std::int32_t>(::GetCurrentThreadId());
      });
  ASSERT_NE(self, s->processes[0].threads.end());
  EXPECT_TRUE(self->cpu_time.has_value());
  if (!availability.available) {
    EXPECT_NE(availability.reason.find("not supported"), std::string::npos);
    ASSERT_EQ(s->warnings.size(), 1U);
    EXPECT_NE(s->warnings[0].find("not supported"), std::string::npos) << s->warnings[0];
    // Any other sample fails there, saying why.
    std::promise<Result<Snapshot>> strict;
    session->asyncSample({}, caller.executor(),
                         [&](Result<Snapshot> r) { strict.set_value(std::move(r)); });
    auto refused = strict.get_future();
    ASSERT_EQ(refused.wait_for(20s), std::future_status::ready);
    const auto r = refused.get();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  }
}

TEST(WctSystem, ThreadsOfAProcessAreListedWithItsIdentity) {
  const auto self = Pid{static_cast<std::int32_t>(::GetCurrentProcessId())};
  std::thread extra([] { std::this_thread::sleep_for(500ms); });
  auto listed = listProcessThreads(self);
  extra.join();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_GE(listed->tids.size(), 2U);
  EXPECT_NE(std::find(listed->tids.begin(), listed->tids.end(), ::GetCurrentThreadId()),
            listed->tids.end());
  EXPECT_NE(listed->start_time, 0U);
  EXPECT_NE(listed->name.find(".exe"), std::string::npos) << listed->name;
  auto again = processStartTime(self);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, listed->start_time);
  auto gone = listProcessThreads(Pid{999999});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kNoSuchProcess);
}

TEST(WctSystem, AThreadsDescriptionIsItsName) {
  using SetThreadDescriptionFunction = HRESULT(WINAPI*)(HANDLE, PCWSTR);
  const auto set_description =
      systemFunction<SetThreadDescriptionFunction>(L"kernel32.dll", "SetThreadDescription");
  if (set_description == nullptr) GTEST_SKIP() << "SetThreadDescription needs Windows 10 1607";
  std::promise<DWORD> named;
  std::promise<void> listed;
  std::thread worker([&] {
    EXPECT_TRUE(SUCCEEDED(set_description(::GetCurrentThread(), L"ingest \u00e9\u2713")));
    named.set_value(::GetCurrentThreadId());
    listed.get_future().wait();
  });
  const DWORD tid = named.get_future().get();
  EXPECT_EQ(threadDescription(tid), "ingest \xc3\xa9\xe2\x9c\x93");
  auto threads = listProcessThreads(Pid{static_cast<std::int32_t>(::GetCurrentProcessId())});
  listed.set_value();
  worker.join();
  ASSERT_TRUE(threads.ok()) << threads.error().message;
  ASSERT_EQ(threads->thread_names.size(), threads->tids.size());
  const auto at = std::find(threads->tids.begin(), threads->tids.end(), tid);
  ASSERT_NE(at, threads->tids.end());
  EXPECT_EQ(threads->thread_names[static_cast<std::size_t>(at - threads->tids.begin())],
            "ingest \xc3\xa9\xe2\x9c\x93");
  EXPECT_EQ(threadDescription(0xFFFFFFF0), "") << "no such thread: no name, no error";
}

}  // namespace
}  // namespace wctmon::windows_platform
