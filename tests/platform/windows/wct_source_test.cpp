// The WCT source against a scripted WCT at its API boundary (Wine's own WCT refuses to open a
// session): every documented outcome of GetThreadWaitChain, results delivered asynchronously on
// a thread of the script's own as WCT does, a cancellation in flight, and the real WCT of the
// system this runs on (under Wine: not supported, said so).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/analyzer.h"
#include "platform/windows/ntdll.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/wct_wait_chain_source.h"
#include "support/thread_executor.h"

namespace wctmon::windows_platform {
namespace {

using namespace std::chrono_literals;
using wctmon::testing::ThreadExecutor;

WAITCHAIN_NODE_INFO threadNode(DWORD pid, DWORD tid, WCT_OBJECT_STATUS status, DWORD wait_ms = 0,
                               DWORD switches = 0) {
  WAITCHAIN_NODE_INFO n{};
  n.ObjectType = WctThreadType;
  n.ObjectStatus = status;
  n.ThreadObject.ProcessId = pid;
  n.ThreadObject.ThreadId = tid;
  n.ThreadObject.WaitTime = wait_ms;
  n.ThreadObject.ContextSwitches = switches;
  return n;
}

WAITCHAIN_NODE_INFO lockNode(WCT_OBJECT_TYPE type, WCT_OBJECT_STATUS status,
                             const wchar_t* name = L"", LONGLONG timeout = 0) {
  WAITCHAIN_NODE_INFO n{};
  n.ObjectType = type;
  n.ObjectStatus = status;
  std::wcsncpy(n.LockObject.ObjectName, name, WCT_OBJNAME_LENGTH);
  n.LockObject.Timeout.QuadPart = timeout;
  return n;
}

/// What the script answers for one thread.
struct Answer {
  DWORD status = ERROR_SUCCESS;
  std::vector<WAITCHAIN_NODE_INFO> nodes;
  bool is_cycle = false;
  /// Returned by GetThreadWaitChain itself instead of through the callback.
  bool synchronous = false;
  /// Kept pending until release() or the session's close.
  bool hold = false;
};

/// An answer that is a failure of the request: no nodes.
Answer failure(DWORD status, bool synchronous = false) {
  Answer a;
  a.status = status;
  a.synchronous = synchronous;
  return a;
}

/// WCT, scripted: answers come on the script's own thread, after GetThreadWaitChain returned
/// ERROR_IO_PENDING, into the caller's buffers, as the reference describes.
class ScriptedWct final : public WctApi {
 public:
  ~ScriptedWct() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void answer(DWORD tid, Answer a) {
    std::lock_guard lock(mutex_);
    answers_[tid] = std::move(a);
  }
  void refuseOpen(DWORD error) { open_error_ = error; }

  HWCT open(DWORD flags, PWAITCHAINCALLBACK callback) override {
    if (open_error_ != ERROR_SUCCESS) {
      ::SetLastError(open_error_);
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    if (flags == kWctAsyncOpenFlag) {
      callback_ = callback;
      if (!thread_.joinable()) thread_ = std::thread([this] { deliverLoop(); });
    }
    ++opened_;
    return reinterpret_cast<HWCT>(static_cast<std::uintptr_t>(opened_));
  }

  void close(HWCT session) override {
    std::lock_guard lock(mutex_);
    ++closed_;
    // Pending requests of the session end with ERROR_CANCELLED.
    for (auto& p : held_) {
      if (p.session == session) {
        p.answer = failure(ERROR_CANCELLED);
        ready_.push_back(p);
      }
    }
    std::erase_if(held_, [session](const Pending& p) { return p.session == session; });
    wake_.notify_all();
  }

  BOOL getChain(HWCT session, DWORD_PTR context, DWORD flags, DWORD tid, LPDWORD count,
                PWAITCHAIN_NODE_INFO nodes, LPBOOL is_cycle) override {
    std::lock_guard lock(mutex_);
    last_flags_ = flags;
    auto it = answers_.find(tid);
    Answer a = it == answers_.end() ? failure(ERROR_OBJECT_NOT_FOUND) : it->second;
    if (a.synchronous) {
      ::SetLastError(a.status);
      return FALSE;
    }
    Pending p{session, context, count, nodes, is_cycle, std::move(a)};
    if (p.answer.hold) {
      held_.push_back(std::move(p));
    } else {
      ready_.push_back(std::move(p));
    }
    wake_.notify_all();
    ::SetLastError(ERROR_IO_PENDING);
    return FALSE;
  }

  bool registerComCallbacks() override { return true; }

  /// Waits until `n` requests are held (made, and not answered).
  bool waitHeld(std::size_t n) {
    std::unique_lock lock(mutex_);
    return wake_.wait_for(lock, 10s, [&] { return held_.size() >= n; });
  }

  void release() {
    std::lock_guard lock(mutex_);
    for (auto& p : held_) {
      p.answer.hold = false;
      ready_.push_back(p);
    }
    held_.clear();
    wake_.notify_all();
  }

  int opened() const { return opened_; }
  int closed() const { return closed_; }
  DWORD lastFlags() const { return last_flags_; }
  std::set<std::thread::id> callbackThreads() {
    std::lock_guard lock(mutex_);
    return callback_threads_;
  }

 private:
  struct Pending {
    HWCT session;
    DWORD_PTR context;
    LPDWORD count;
    PWAITCHAIN_NODE_INFO nodes;
    LPBOOL is_cycle;
    Answer answer;
  };

  void deliverLoop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !ready_.empty(); });
      if (ready_.empty()) return;
      auto p = std::move(ready_.front());
      ready_.pop_front();
      callback_threads_.insert(std::this_thread::get_id());
      const auto& a = p.answer;
      if (a.status == ERROR_SUCCESS || a.status == ERROR_MORE_DATA ||
          a.status == kErrorTooManyThreads) {
        const auto n = std::min<std::size_t>(a.nodes.size(), *p.count);
        std::copy(a.nodes.begin(), a.nodes.begin() + static_cast<std::ptrdiff_t>(n), p.nodes);
        *p.count = static_cast<DWORD>(n);
        *p.is_cycle = a.is_cycle ? TRUE : FALSE;
      }
      auto callback = callback_;
      lock.unlock();
      callback(p.session, p.context, a.status, p.count, p.nodes, p.is_cycle);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<DWORD, Answer> answers_;
  std::deque<Pending> ready_;
  std::vector<Pending> held_;
  std::set<std::thread::id> callback_threads_;
  PWAITCHAINCALLBACK callback_ = nullptr;
  std::atomic<DWORD> open_error_{ERROR_SUCCESS};
  std::atomic<int> opened_{0};
  std::atomic<int> closed_{0};
  std::atomic<DWORD> last_flags_{0};
  bool stop_ = false;
  std::thread thread_;
};

constexpr DWORD kPid = 4242;

/// Two threads deadlocked on two critical sections, and an idle one.
void scriptAbba(ScriptedWct& wct) {
  wct.answer(11, {.nodes = {threadNode(kPid, 11, WctStatusBlocked, 5000, 7),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 12, WctStatusBlocked, 5000, 9),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 11, WctStatusBlocked, 5000, 7)},
                  .is_cycle = true});
  wct.answer(12, {.nodes = {threadNode(kPid, 12, WctStatusBlocked, 5000, 9),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 11, WctStatusBlocked, 5000, 7),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 12, WctStatusBlocked, 5000, 9)},
                  .is_cycle = true});
  wct.answer(13, {.nodes = {threadNode(kPid, 13, WctStatusRunning)}});
}

ProcessThreads process(std::vector<DWORD> tids) {
  return ProcessThreads{Pid{static_cast<std::int32_t>(kPid)},
                        "demo.exe",
                        1234,
                        std::move(tids),
                        {"main", "", "worker-\xc3\xa9"}};
}

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
  Result<Snapshot> sample(bool out_of_proc = false) {
    auto session = std::move(source_.open(Pid{static_cast<std::int32_t>(kPid)})).value();
    std::promise<Result<Snapshot>> done;
    session->asyncSample(
        SampleScope{.out_of_proc = out_of_proc}, caller_.executor(), [&](Result<Snapshot> s) {
          EXPECT_EQ(std::this_thread::get_id(), caller_.id()) << "completions run on the executor";
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

TEST_F(WctSourceTest, WhereWctIsNotSupportedTheSourceSaysSoAndEverySampleFailsClearly) {
  wct_->refuseOpen(ERROR_NOT_SUPPORTED);
  const auto availability = source_.availability();
  EXPECT_EQ(availability.name, "windows-wct");
  EXPECT_FALSE(availability.available);
  EXPECT_NE(availability.reason.find("not supported"), std::string::npos) << availability.reason;
  scriptAbba(*wct_);
  auto s = sample();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(s.error().message.find("ERROR_NOT_SUPPORTED"), std::string::npos);
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

TEST_F(WctSourceTest, ASecondOperationWhileOneIsInFlightIsRefusedAsBusy) {
  scriptAbba(*wct_);
  wct_->answer(13, {.nodes = {threadNode(kPid, 13, WctStatusRunning)}, .hold = true});
  auto session = std::move(source_.open(Pid{static_cast<std::int32_t>(kPid)})).value();
  std::promise<Result<Snapshot>> first;
  std::promise<Result<Snapshot>> second;
  session->asyncSample({}, caller_.executor(),
                       [&](Result<Snapshot> s) { first.set_value(std::move(s)); });
  session->asyncSample({}, caller_.executor(),
                       [&](Result<Snapshot> s) { second.set_value(std::move(s)); });
  auto refused = second.get_future().get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kBusy);
  ASSERT_TRUE(wct_->waitHeld(1));
  wct_->release();
  auto s = first.get_future().get();
  ASSERT_TRUE(s.ok()) << s.error().message;
}

TEST(WctSystem, TheSystemsWctIsAskedAndItsAnswerReported) {
  ThreadExecutor work;
  ThreadExecutor caller;
  WctWaitChainSource source(work.executor(), makeSystemWctApi(), listProcessThreads);
  const auto availability = source.availability();
  auto session =
      std::move(source.open(Pid{static_cast<std::int32_t>(::GetCurrentProcessId())})).value();
  std::promise<Result<Snapshot>> done;
  session->asyncSample({}, caller.executor(),
                       [&](Result<Snapshot> s) { done.set_value(std::move(s)); });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(20s), std::future_status::ready);
  auto s = future.get();
  if (availability.available) {
    // A real Windows: our own threads, this one among them, read.
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_GE(s->processes[0].threads.size(), 3U);
  } else {
    // Wine: OpenThreadWaitChainSession is a stub that answers ERROR_NOT_SUPPORTED.
    EXPECT_NE(availability.reason.find("not supported"), std::string::npos);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::kUnsupported);
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
