// The Linux engine against processes that really deadlock or wait: exact owners and cycles.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/sem.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/analyzer.h"
#include "model/format.h"
#include "platform/linux/linux_process_catalog.h"
#include "platform/linux/linux_wait_chain_source.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/process_reader.h"
#include "platform/linux/ptrace_inspector.h"
#include "platform/linux/stack_unwinder.h"
#include "platform/linux/taskstats.h"
#include "support/subprocess.h"

namespace wctmon {
namespace {

using testing::FixtureProcess;

ThreadRef ref(int pid, int tid) { return ThreadRef{Pid{pid}, Tid{tid}}; }

class EngineTest : public ::testing::Test {
 protected:
  /// One analysis, on a session of its own unless one is given (repeated samples, as the
  /// service does them).
  Result<AnalysisResult> tryAnalyze(int pid, AnalyzeOptions options = {},
                                    std::shared_ptr<WaitChainSession> session = nullptr) {
    if (session == nullptr) session = std::move(source_.open(Pid{pid})).value();
    WaitChainAnalyzer analyzer(&inspector_);
    auto analysis = analyzeNow(loop_, analyzer, std::move(session), std::move(options));
    if (!analysis) return analysis.error();
    return std::move(analysis->result);
  }

  AnalysisResult analyze(int pid, AnalyzeOptions options = {}) {
    auto result = tryAnalyze(pid, std::move(options));
    if (!result) throw std::runtime_error(result.error().message);
    return std::move(result).value();
  }

  /// One sample through `session`, run to its end.
  Result<Snapshot> sample(WaitChainSession& session, bool out_of_proc = false) {
    std::optional<Result<Snapshot>> out;
    session.asyncSample(SampleScope{.out_of_proc = out_of_proc}, loop_.executor(),
                        [&out](Result<Snapshot> s) { out.emplace(std::move(s)); });
    loop_.run();
    if (!out) return makeError(ErrorCode::kInternal, "the sample never completed");
    return std::move(*out);
  }

  /// Reads `pid` through `cache` as a session's sample does.
  static Result<ProcessSample> readCached(int pid, linux_platform::ThreadCache& cache) {
    linux_platform::SampleContext context;
    return linux_platform::ProcessReader(context).readCached(Pid{pid}, cache);
  }

  /// Analyses until `done` holds (the fixture may still be settling), at most a few seconds.
  AnalysisResult analyzeUntil(int pid, const std::function<bool(const AnalysisResult&)>& done,
                              AnalyzeOptions options = {}) {
    AnalysisResult r;
    for (int i = 0; i < 50; ++i) {
      r = analyze(pid, options);
      if (done(r)) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r;
  }

  static const WaitChain& chainOf(const AnalysisResult& r, int tid) {
    for (const auto& c : r.chains) {
      if (c.start.tid.value == tid) return c;
    }
    throw std::runtime_error("no chain for thread " + std::to_string(tid));
  }

  static bool hasDeadlock(const AnalysisResult& r) { return !r.deadlocks.empty(); }

  RunLoop loop_;
  linux_platform::LinuxWaitChainSource source_{loop_.executor()};
  linux_platform::PtraceInspector inspector_;
};

/// Expects `chain` to go: start -> object of `type` -> thread `owner`.
void expectWaitsOn(const WaitChain& chain, ObjectType type, ThreadRef owner) {
  ASSERT_GE(chain.nodes.size(), 3U);
  EXPECT_EQ(chain.nodes[1].type, type) << toString(chain.nodes[1].type);
  EXPECT_EQ(chain.nodes[1].status, ObjectStatus::kOwned);
  EXPECT_EQ(chain.nodes[2].thread, owner);
}

class MutexKinds : public EngineTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(MutexKinds, AbbaDeadlockNamesBothOwners) {
  FixtureProcess fx("mutex-abba", GetParam());
  const int pid = fx.pid(), a = fx.tid("a"), b = fx.tid("b");
  const auto r = analyzeUntil(pid, hasDeadlock);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(pid, b)}));
  // The main thread joins a: a spur.
  EXPECT_EQ(r.deadlocks[0].spurs, (std::vector<ThreadRef>{ref(pid, pid)}));
  const auto& ca = chainOf(r, a);
  expectWaitsOn(ca, ObjectType::kMutex, ref(pid, b));
  EXPECT_EQ(ca.nodes[1].name, fx.report()["objects"]["m2"].get<std::string>());
  EXPECT_TRUE(ca.is_cycle);
  const auto& cb = chainOf(r, b);
  expectWaitsOn(cb, ObjectType::kMutex, ref(pid, a));
  EXPECT_EQ(cb.nodes[1].name, fx.report()["objects"]["m1"].get<std::string>());
  const auto& main = chainOf(r, pid);
  expectWaitsOn(main, ObjectType::kThreadWait, ref(pid, a));
  EXPECT_TRUE(main.is_cycle);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, MutexKinds,
                         ::testing::Values("normal", "recursive", "errorcheck", "adaptive",
                                           "robust", "std", "std-recursive"));

class PriorityInheritanceKinds : public EngineTest,
                                 public ::testing::WithParamInterface<const char*> {};

TEST_P(PriorityInheritanceKinds, AnAbbaParkedAfterEdeadlkIsADeadlock) {
  // The kernel refuses the second PI lock with EDEADLK and glibc parks that thread for good on a
  // futex of its own stack; the pthread_mutex_lock it is in still holds the mutex it wanted.
  FixtureProcess fx("mutex-abba", GetParam());
  const int pid = fx.pid(), a = fx.tid("a"), b = fx.tid("b");
  const auto r = analyzeUntil(pid, hasDeadlock);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(pid, b)}));
  const auto& ca = chainOf(r, a);
  const auto& cb = chainOf(r, b);
  expectWaitsOn(ca, ObjectType::kMutex, ref(pid, b));
  expectWaitsOn(cb, ObjectType::kMutex, ref(pid, a));
  EXPECT_EQ(ca.nodes[1].name, fx.report()["objects"]["m2"].get<std::string>());
  EXPECT_EQ(cb.nodes[1].name, fx.report()["objects"]["m1"].get<std::string>());
  const bool a_parked = ca.nodes[1].detail.find("EDEADLK") != std::string::npos;
  const bool b_parked = cb.nodes[1].detail.find("EDEADLK") != std::string::npos;
  EXPECT_NE(a_parked, b_parked) << ca.nodes[1].detail << " / " << cb.nodes[1].detail;
  EXPECT_NE(ca.nodes[1].detail.find("priority-inheritance"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(PiAndRobustPi, PriorityInheritanceKinds,
                         ::testing::Values("pi", "robust-pi"));

TEST_F(EngineTest, SelfDeadlockIsACycleOfOne) {
  FixtureProcess fx("self-deadlock");
  const int pid = fx.pid(), a = fx.tid("a");
  const auto r = analyzeUntil(pid, hasDeadlock);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a)}));
  const auto& c = chainOf(r, a);
  expectWaitsOn(c, ObjectType::kMutex, ref(pid, a));
  EXPECT_TRUE(c.is_cycle);
}

TEST_F(EngineTest, ProcessSharedMutexDeadlockAcrossProcesses) {
  FixtureProcess fx("pshared-abba", "normal");
  const int pid = fx.pid(), a = fx.tid("a"), child = fx.child("child");
  // Without out-of-proc the chain stops at the child, marked PidOnly (once the fixture has
  // settled in its waits).
  auto r = analyzeUntil(pid, [&](const AnalysisResult& x) {
    return std::any_of(x.chains.begin(), x.chains.end(), [&](const WaitChain& c) {
      return c.start.tid.value == a && c.nodes.size() == 3;
    });
  });
  EXPECT_TRUE(r.deadlocks.empty());
  const auto& in = chainOf(r, a);
  ASSERT_EQ(in.nodes.size(), 3U);
  EXPECT_EQ(in.nodes[2].thread, ref(child, child));
  EXPECT_EQ(in.nodes[2].status, ObjectStatus::kPidOnly);

  r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(child, child)}));
  EXPECT_TRUE(r.deadlocks[0].crossProcess());
  expectWaitsOn(chainOf(r, a), ObjectType::kMutex, ref(child, child));
}

class ProcessSharedKinds : public EngineTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ProcessSharedKinds, ADeadlockAcrossProcessesNamesBothThreads) {
  FixtureProcess fx("pshared-abba", GetParam());
  const int pid = fx.pid(), a = fx.tid("a"), child = fx.child("child");
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(child, child)}));
  EXPECT_TRUE(r.deadlocks[0].crossProcess());
}

INSTANTIATE_TEST_SUITE_P(RobustAndPriorityInheritance, ProcessSharedKinds,
                         ::testing::Values("robust", "pi"));

TEST_F(EngineTest, RwlockHeldForWritingIsOwnedByTheWriter) {
  FixtureProcess fx("rwlock-write");
  const int pid = fx.pid(), w = fx.tid("writer");
  const auto r = analyze(pid);
  for (const char* waiter : {"reader", "writer2"}) {
    const auto& c = chainOf(r, fx.tid(waiter));
    expectWaitsOn(c, ObjectType::kRwLock, ref(pid, w));
    EXPECT_EQ(c.nodes[1].name, fx.report()["objects"]["rw"].get<std::string>());
  }
  EXPECT_TRUE(r.deadlocks.empty());
}

TEST_F(EngineTest, RwlockHeldForReadingSaysTheOwnerIsUnknown) {
  FixtureProcess fx("rwlock-read");
  const auto r = analyze(fx.pid());
  const auto& c = chainOf(r, fx.tid("writer"));
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kRwLock);
  EXPECT_EQ(c.nodes[1].status, ObjectStatus::kUnknown);
  EXPECT_NE(c.nodes[1].detail.find("reading"), std::string::npos);
}

TEST_F(EngineTest, SharedMutexWriterDeadlock) {
  FixtureProcess fx("rwlock-abba");
  const int pid = fx.pid(), a = fx.tid("a"), b = fx.tid("b");
  const auto r = analyzeUntil(pid, hasDeadlock);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(pid, b)}));
  expectWaitsOn(chainOf(r, a), ObjectType::kRwLock, ref(pid, b));
}

TEST_F(EngineTest, JoinIsAThreadWaitOnTheJoinedThread) {
  FixtureProcess fx("join-cycle");
  const int pid = fx.pid(), a = fx.tid("a");
  const auto r = analyzeUntil(pid, hasDeadlock);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(pid, a)}));
  expectWaitsOn(chainOf(r, pid), ObjectType::kThreadWait, ref(pid, a));
  expectWaitsOn(chainOf(r, a), ObjectType::kMutex, ref(pid, pid));
}

TEST_F(EngineTest, WaitpidIsAProcessWaitOnTheChild) {
  FixtureProcess fx("waitpid");
  const int pid = fx.pid(), child = fx.child("child");
  const auto r = analyze(pid);
  const auto& c = chainOf(r, pid);
  expectWaitsOn(c, ObjectType::kProcessWait, ref(child, child));
  EXPECT_EQ(c.nodes[1].owner_pids, (std::vector<Pid>{Pid{child}}));
  EXPECT_TRUE(r.deadlocks.empty());
}

TEST_F(EngineTest, WaitpidOnAChildThatReadsTheParentsPipeIsACrossProcessDeadlock) {
  FixtureProcess fx("waitpid-cycle");
  const int pid = fx.pid(), child = fx.child("child");
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(child, child)}));
  const auto& c = chainOf(r, pid);
  expectWaitsOn(c, ObjectType::kProcessWait, ref(child, child));
  ASSERT_GE(c.nodes.size(), 5U);
  EXPECT_EQ(c.nodes[3].type, ObjectType::kPipe);
  EXPECT_EQ(c.nodes[3].owner_pids, (std::vector<Pid>{Pid{pid}}));
}

class FileLockKinds : public EngineTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(FileLockKinds, LockWaitIsOwnedByTheHolder) {
  FixtureProcess fx("file-lock", GetParam());
  const int pid = fx.pid(), child = fx.child("child");
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(child, child)}));
  const auto& c = chainOf(r, pid);
  ASSERT_GE(c.nodes.size(), 5U);
  EXPECT_EQ(c.nodes[3].type, ObjectType::kFileLock);
  EXPECT_EQ(c.nodes[3].owner_pids, (std::vector<Pid>{Pid{pid}}));
}

INSTANTIATE_TEST_SUITE_P(AllKinds, FileLockKinds, ::testing::Values("posix", "flock", "ofd"));

TEST_F(EngineTest, PipeDeadlockBetweenParentAndChild) {
  FixtureProcess fx("pipe-deadlock");
  const int pid = fx.pid(), child = fx.child("child");
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(child, child)}));
  const auto& c = chainOf(r, pid);
  expectWaitsOn(c, ObjectType::kPipe, ref(child, child));
  EXPECT_EQ(c.nodes[1].owner_pids, (std::vector<Pid>{Pid{child}}));
}

TEST_F(EngineTest, ReaderHoldingTheOnlyWriteEndWaitsOnItsOwnProcess) {
  FixtureProcess fx("pipe-read");
  const int pid = fx.pid(), reader = fx.tid("reader");
  const auto r = analyzeUntil(pid, hasDeadlock);
  const auto& c = chainOf(r, reader);
  ASSERT_GE(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kPipe);
  EXPECT_EQ(c.nodes[1].owner_pids, (std::vector<Pid>{Pid{pid}}));
  // The main thread joins the reader, the reader waits for a writer in its own process: stuck.
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(pid, reader)}));
}

TEST_F(EngineTest, UnixSocketWaitIsOwnedByThePeer) {
  FixtureProcess fx("unix-socket");
  const int pid = fx.pid(), child = fx.child("child");
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(child, child)}));
  expectWaitsOn(chainOf(r, pid), ObjectType::kUnixSocket, ref(child, child));
}

TEST_F(EngineTest, ASocketPairBothProcessesKeepIsACycleThroughBoth) {
  // Each process holds both ends: the parent's own copy of the peer end cannot end its wait.
  FixtureProcess fx("unix-socket", "keep-both-ends");
  const int pid = fx.pid(), child = fx.child("child");
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, pid), ref(child, child)}));
  const auto& c = chainOf(r, pid);
  ASSERT_GE(c.nodes.size(), 5U);
  EXPECT_EQ(c.nodes[2].thread, ref(child, child));
  EXPECT_EQ(c.nodes[4].thread, ref(pid, pid));
  EXPECT_TRUE(c.is_cycle);
}

TEST_F(EngineTest, OwnerlessWaitsEndTheChainBlocked) {
  FixtureProcess fx("ownerless");
  const auto r = analyze(fx.pid());
  EXPECT_TRUE(r.deadlocks.empty());
  const std::pair<const char*, ObjectType> expected[] = {{"condvar", ObjectType::kCondition},
                                                         {"semaphore", ObjectType::kUnownedLock},
                                                         {"eventfd", ObjectType::kEventfd},
                                                         {"sleeper", ObjectType::kSleep}};
  for (const auto& [name, type] : expected) {
    const auto& c = chainOf(r, fx.tid(name));
    ASSERT_EQ(c.nodes.size(), 2U) << name;
    EXPECT_EQ(c.nodes[1].type, type) << name;
    EXPECT_EQ(c.nodes[1].status,
              type == ObjectType::kUnownedLock ? ObjectStatus::kUnknown : ObjectStatus::kBlocked)
        << name;
    EXPECT_TRUE(c.nodes[1].owner_pids.empty());
  }
  EXPECT_NE(chainOf(r, fx.tid("condvar")).nodes[1].name.find("pthread_cond_wait"),
            std::string::npos);
  EXPECT_NE(chainOf(r, fx.tid("semaphore")).nodes[1].name.find("POSIX semaphore"),
            std::string::npos);
  EXPECT_TRUE(chainOf(r, fx.tid("sleeper")).nodes[1].timeout.has_value());
}

TEST_F(EngineTest, UninterruptibleWaitIsAKernelWaitNotALock) {
  FixtureProcess fx("dstate");
  const auto r = analyze(fx.pid());
  const auto& c = chainOf(r, fx.pid());
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kKernelWait);
  EXPECT_EQ(c.nodes[1].status, ObjectStatus::kBlocked);
  EXPECT_FALSE(c.nodes[1].name.empty());
  EXPECT_TRUE(r.deadlocks.empty());
}

TEST_F(EngineTest, HundredsOfIdleThreadsAreNoDeadlock) {
  FixtureProcess fx("idle", "300");
  const auto r = analyze(fx.pid());
  EXPECT_GE(r.thread_count, 301U);
  EXPECT_TRUE(r.deadlocks.empty());
  EXPECT_TRUE(r.warnings.empty());
}

TEST_F(EngineTest, HotLocksTakenInOrderNeverShowADeadlock) {
  FixtureProcess fx("hot-locks", "8");
  for (int i = 0; i < 200; ++i) {
    const auto r = analyze(fx.pid());
    ASSERT_TRUE(r.deadlocks.empty()) << "iteration " << i;
  }
}

TEST_F(EngineTest, LongChainIsFollowedToItsEndWithoutACycle) {
  FixtureProcess fx("long-chain", "40");
  const int pid = fx.pid();
  const auto r = analyze(pid, AnalyzeOptions{.max_nodes = 200});
  EXPECT_TRUE(r.deadlocks.empty());
  const auto& c = chainOf(r, fx.tid("t0"));
  EXPECT_FALSE(c.is_cycle);
  EXPECT_FALSE(c.truncated);
  EXPECT_EQ(c.node_count, 80U);  // 40 threads, 39 mutexes, the last one's signal wait
  for (int i = 0; i < 39; ++i) {
    EXPECT_EQ(c.nodes[static_cast<std::size_t>(2 * i + 2)].thread,
              ref(pid, fx.tid("t" + std::to_string(i + 1))));
  }
  const auto cut = analyze(pid, AnalyzeOptions{.max_nodes = 16});
  const auto& t = chainOf(cut, fx.tid("t0"));
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.nodes.size(), 16U);
  EXPECT_EQ(t.node_count, 80U);
}

TEST_F(EngineTest, UnknownProcessIsAClearError) {
  auto r = tryAnalyze(0x7ffffff0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_NE(r.error().message.find("no such process"), std::string::npos);
}

TEST_F(EngineTest, ProcessExitingMidAnalysisNeverCrashesOrNamesAWrongOwner) {
  // Threads come and go all the time and the process exits at a random point of an analysis:
  // every analysis either succeeds with owners inside the process or says the process is gone.
  for (int round = 0; round < 5; ++round) {
    FixtureProcess fx("churn", std::to_string(100 + 37 * round));
    const int pid = fx.pid();
    int ok = 0;
    bool gone = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!gone && std::chrono::steady_clock::now() < deadline) {
      auto r = tryAnalyze(pid);
      fx.reapIfExited();
      if (!r) {
        EXPECT_EQ(r.error().code, ErrorCode::kNoSuchProcess) << r.error().message;
        gone = true;
        break;
      }
      ++ok;
      EXPECT_TRUE(r->deadlocks.empty());
      for (const auto& c : r->chains) {
        if (c.nodes.size() >= 3 && c.nodes[1].type == ObjectType::kMutex) {
          EXPECT_EQ(c.nodes[2].thread.pid, Pid{pid});
        }
      }
    }
    EXPECT_TRUE(gone);
    EXPECT_GT(ok, 0);
  }
}

TEST_F(EngineTest, CaptureTakesRegistersAndStacksAndTheTargetKeepsRunning) {
  FixtureProcess fx("heartbeat");
  const int pid = fx.pid(), a = fx.tid("a"), b = fx.tid("b");
  const long before = std::stol(fx.ask("beat"));
  const auto r = analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.capture = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  ASSERT_EQ(r.captures.size(), 2U);
  for (const auto& c : r.captures) {
    EXPECT_TRUE(c.captured) << c.error;
    EXPECT_EQ(c.architecture, "x86_64");
    EXPECT_GT(c.stop_time.count(), 0);
    EXPECT_LT(c.stop_time, std::chrono::milliseconds(50));
    ASSERT_FALSE(c.registers.empty());
    EXPECT_EQ(c.registers[0].name, "rip");
    ASSERT_GE(c.frames.size(), 3U);
    bool in_lock = false;
    for (const auto& f : c.frames) {
      if (f.function.find("pthread_mutex_lock") != std::string::npos ||
          f.function.find("lll_lock_wait") != std::string::npos) {
        in_lock = true;
      }
    }
    EXPECT_TRUE(in_lock) << "no lock frame in the stack of " << c.thread.tid.value;
  }
  EXPECT_EQ(r.captures[0].thread, ref(pid, a));
  EXPECT_EQ(r.captures[1].thread, ref(pid, b));

  // Released: still alive, untraced, still deadlocked, and the heartbeat goes on.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const long after = std::stol(fx.ask("beat"));
  EXPECT_GT(after, before);
  const auto again = analyze(pid);
  ASSERT_EQ(again.deadlocks.size(), 1U);
  for (const auto& c : again.chains) EXPECT_NE(c.nodes[0].status, ObjectStatus::kError);
  EXPECT_EQ(inspector_.capture(std::vector<ThreadRef>{ref(pid, a)})[0].tracer_pid, 0);
}

TEST_F(EngineTest, RepeatedSamplesReuseWhatCannotHaveChanged) {
  FixtureProcess fx("idle", "200");
  linux_platform::ThreadCache threads;
  auto first = readCached(fx.pid(), threads);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(threads.reused(), 0U);
  auto second = readCached(fx.pid(), threads);
  ASSERT_TRUE(second.ok());
  // The idle workers did not run between the two samples: their readings are reused.
  EXPECT_GE(threads.reused(), 200U);
  EXPECT_GE(threads.openDescriptors(), 200U);
  auto session = std::move(source_.open(Pid{fx.pid()})).value();
  const auto fresh = sample(*session);
  ASSERT_TRUE(fresh.ok());
  const auto& a = second->threads;
  const auto& b = fresh->processes.front().threads;
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].status, b[i].status);
    EXPECT_EQ(a[i].wait.has_value(), b[i].wait.has_value());
    if (a[i].wait && b[i].wait) {
      EXPECT_EQ(a[i].wait->type, b[i].wait->type);
      EXPECT_EQ(a[i].wait->key, b[i].wait->key);
    }
    EXPECT_TRUE(a[i].context_switches.has_value());
  }
}

TEST_F(EngineTest, TaskstatsTellsWhenNoThreadOfAProcessRan) {
  linux_platform::TaskstatsClient taskstats;
  if (!taskstats.available()) GTEST_SKIP() << "taskstats needs CAP_NET_ADMIN and CONFIG_TASKSTATS";
  FixtureProcess idle("idle", "50");
  // Once its threads have settled in their waits, an idle process's activity stands still.
  bool still = false;
  for (int i = 0; i < 40 && !still; ++i) {
    const auto a = taskstats.activity(Pid{idle.pid()});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto b = taskstats.activity(Pid{idle.pid()});
    ASSERT_TRUE(a && b);
    still = *a == *b;
  }
  EXPECT_TRUE(still);
  FixtureProcess busy("hot-locks", "2");
  const auto c = taskstats.activity(Pid{busy.pid()});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto d = taskstats.activity(Pid{busy.pid()});
  ASSERT_TRUE(c && d);
  EXPECT_NE(*c, *d);
  EXPECT_FALSE(taskstats.activity(Pid{0x7ffffff0}).has_value());

  // With it, a cached sample of the idle process after the first reads no thread at all, and a
  // deadlock that forms later is still seen at once.
  linux_platform::ThreadCache threads;
  linux_platform::SampleContext context;
  linux_platform::ProcessReader reader(context);
  ASSERT_TRUE(reader.readCached(Pid{idle.pid()}, threads, &taskstats).ok());
  ASSERT_TRUE(reader.readCached(Pid{idle.pid()}, threads, &taskstats).ok());
  const auto again = reader.readCached(Pid{idle.pid()}, threads, &taskstats);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(threads.reread(), 0U);
  EXPECT_EQ(again->threads.size(), 51U);
}

TEST_F(EngineTest, ACachedSampleSeesThreadsThatRanAndDeadlocksThatFormed) {
  FixtureProcess fx("mutex-abba");
  std::shared_ptr<WaitChainSession> session = std::move(source_.open(Pid{fx.pid()})).value();
  for (int i = 0; i < 12; ++i) {  // past a full refresh too
    auto r = tryAnalyze(fx.pid(), {}, session);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->deadlocks.size(), 1U) << i;
    EXPECT_EQ(r->deadlocks[0].threads,
              (std::vector<ThreadRef>{ref(fx.pid(), fx.tid("a")), ref(fx.pid(), fx.tid("b"))}));
  }
  FixtureProcess busy("hot-locks", "4");
  std::shared_ptr<WaitChainSession> busy_session = std::move(source_.open(Pid{busy.pid()})).value();
  for (int i = 0; i < 50; ++i) {
    auto r = tryAnalyze(busy.pid(), {}, busy_session);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->deadlocks.empty());
  }
}

/// This test process as the other tracer of one thread, for as long as it lives. A seized
/// thread is detached from a stop, and must be: a traced thread could not be reaped otherwise.
class OtherTracer {
 public:
  explicit OtherTracer(int tid) : tid_(tid) {
    seized_ = ::ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) == 0;
  }
  ~OtherTracer() {
    if (!seized_) return;
    ::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr);
    int status = 0;
    ::waitpid(tid_, &status, __WALL);
    ::ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
  }
  [[nodiscard]] bool seized() const { return seized_; }

 private:
  int tid_;
  bool seized_ = false;
};

TEST_F(EngineTest, AThreadAlreadyTracedIsReportedAndLeftAlone) {
  FixtureProcess fx("mutex-abba");
  const int pid = fx.pid(), a = fx.tid("a");
  OtherTracer tracer(a);
  ASSERT_TRUE(tracer.seized()) << std::strerror(errno);
  const auto captures =
      inspector_.capture(std::vector<ThreadRef>{ref(pid, a), ref(pid, fx.tid("b"))});
  ASSERT_EQ(captures.size(), 2U);
  EXPECT_FALSE(captures[0].captured);
  EXPECT_EQ(captures[0].tracer_pid, ::getpid());
  EXPECT_NE(captures[0].error.find("already traced"), std::string::npos) << captures[0].error;
  EXPECT_EQ(captures[0].stop_time.count(), 0);
  EXPECT_TRUE(captures[1].captured) << captures[1].error;
}

TEST_F(EngineTest, AThreadHeldByOurOwnCaptureStaysInTheDeadlockItIsIn) {
  // The service samples a process while one of its workers holds a thread of it for a capture:
  // that moment's stop must not break the cycle (a resolution) nor make its waiter look hung.
  FixtureProcess fx("mutex-abba");
  const int pid = fx.pid(), a = fx.tid("a");
  ASSERT_EQ(analyzeUntil(pid, hasDeadlock).deadlocks.size(), 1U);
  ASSERT_EQ(::ptrace(PTRACE_SEIZE, a, nullptr, nullptr), 0) << std::strerror(errno);
  struct Detach {
    int tid;
    ~Detach() { ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr); }
  } detach{a};
  ASSERT_EQ(::ptrace(PTRACE_INTERRUPT, a, nullptr, nullptr), 0) << std::strerror(errno);
  int status = 0;
  ASSERT_EQ(::waitpid(a, &status, __WALL), a);
  ASSERT_EQ(testing::threadStates(pid)[a], 't');

  const auto held = analyze(pid);
  EXPECT_EQ(held.deadlocks.size(), 1U);
  for (const auto& c : held.chains) {
    for (const auto& n : c.nodes) EXPECT_NE(n.name, "tracing stop") << n.detail;
  }
}

TEST_F(EngineTest, CapturingAThreadThatIsGoneIsAnErrorNotACrash) {
  const auto captures = inspector_.capture(std::vector<ThreadRef>{ref(0x7ffffff0, 0x7ffffff0)});
  ASSERT_EQ(captures.size(), 1U);
  EXPECT_FALSE(captures[0].captured);
  EXPECT_FALSE(captures[0].error.empty());
}

TEST_F(EngineTest, CaptureNeverCutsAPipeWriteShort) {
  // Parent and child each block writing 1 MiB into a pipe the other never reads. A ptrace stop
  // would make a write that has moved 64 KiB return 65536: the capture must leave both whole.
  FixtureProcess fx("pipe-deadlock");
  const int pid = fx.pid(), child = fx.child("child");
  const auto r =
      analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true, .capture = true});
  ASSERT_EQ(r.deadlocks.size(), 1U);
  ASSERT_EQ(r.captures.size(), 2U);
  for (const auto& c : r.captures) {
    EXPECT_TRUE(c.captured) << c.error;
    EXPECT_EQ(c.method, CaptureMethod::kNotStopped);
    EXPECT_EQ(c.stop_time.count(), 0);
    EXPECT_NE(c.note.find("write"), std::string::npos) << c.note;
    ASSERT_GE(c.registers.size(), 2U);
    EXPECT_EQ(c.registers[0].name, "rip");
    EXPECT_NE(c.registers[0].value, 0U);
    // The stack is unwound from memory as far as the fixture's own function.
    bool in_fixture = false;
    for (const auto& f : c.frames) {
      if (f.function.find("pipeDeadlock") == std::string::npos) continue;
      in_fixture = true;
      // Unwound (not a stale address found by scanning): the line of the call in the fixture's
      // source, from its debug information.
      if (f.scanned) continue;
      EXPECT_TRUE(f.file.ends_with("fixtures/wctmon_fixture.cpp")) << f.file;
      EXPECT_GT(f.line, 0U);
    }
    EXPECT_TRUE(in_fixture) << "thread " << c.thread.tid.value;
  }
  // Still deadlocked: nothing moved.
  EXPECT_EQ(analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true}).deadlocks.size(),
            1U);
  // Let both writes finish: each must have written all of its 1 MiB.
  constexpr std::size_t kMiB = 1 << 20;
  const auto fd = [&](const char* name) {
    return std::stoi(fx.report().at("objects").at(name).get<std::string>());
  };
  EXPECT_EQ(testing::drainPipe(child, fd("child_read_fd"), kMiB), kMiB);
  EXPECT_EQ(testing::drainPipe(pid, fd("parent_read_fd"), kMiB), kMiB);
  std::set<std::string> lines;
  for (int i = 0; i < 2; ++i) lines.insert(fx.nextLine(std::chrono::seconds(5)));
  EXPECT_EQ(lines, (std::set<std::string>{"child wrote 1048576 of 1048576",
                                          "parent wrote 1048576 of 1048576"}));
}

TEST_F(EngineTest, AWriterWaitingForAStoppedReaderIsNoDeadlock) {
  FixtureProcess fx("pipe-deadlock");
  const int pid = fx.pid(), child = fx.child("child");
  ASSERT_EQ(analyzeUntil(pid, hasDeadlock, AnalyzeOptions{.out_of_proc = true}).deadlocks.size(),
            1U);
  // The child holds the read end of the parent's pipe; once stopped, it waits for SIGCONT, not
  // for the parent: the parent's chain ends at it, a hang that SIGCONT ends.
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  const auto stopped = analyzeUntil(
      pid,
      [&](const AnalysisResult& r) {
        return r.deadlocks.empty() &&
               chainOf(r, pid).nodes[1].detail.find("stopped") != std::string::npos;
      },
      AnalyzeOptions{.out_of_proc = true});
  EXPECT_TRUE(stopped.deadlocks.empty());
  const auto& c = chainOf(stopped, pid);
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_FALSE(c.is_cycle);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kPipe);
  EXPECT_EQ(c.nodes[1].owner_pids, (std::vector<Pid>{Pid{child}}));
  EXPECT_NE(c.nodes[1].detail.find("holder " + std::to_string(child)), std::string::npos)
      << c.nodes[1].detail;
  const auto child_view = analyze(child);
  const auto& cc = chainOf(child_view, child);
  ASSERT_EQ(cc.nodes.size(), 2U);
  EXPECT_EQ(cc.nodes[1].type, ObjectType::kKernelWait);
  EXPECT_EQ(cc.nodes[1].name, "stopped");
  EXPECT_NE(cc.nodes[1].detail.find("SIGCONT"), std::string::npos);
  // (SIGSTOP itself, unlike the engine, does cut the child's write short: job control is the
  // user's doing.)
  ::kill(child, SIGCONT);
}

TEST_F(EngineTest, ABackOffCycleOfTimedLocksIsNoDeadlockNextToARealOne) {
  FixtureProcess fx("timed-backoff");
  const int pid = fx.pid();
  for (int i = 0; i < 10; ++i) {
    const auto r = analyze(pid);
    ASSERT_EQ(r.deadlocks.size(), 1U) << "sample " << i;
    EXPECT_EQ(r.deadlocks[0].threads,
              (std::vector<ThreadRef>{ref(pid, fx.tid("a")), ref(pid, fx.tid("b"))}));
    for (const auto& c : r.chains) {
      if (c.start.tid.value == fx.tid("c") || c.start.tid.value == fx.tid("d")) {
        EXPECT_FALSE(c.is_cycle) << "sample " << i;
      }
    }
  }
}

TEST_F(EngineTest, ATimedWaitThatOutlivesTheBoundClosesADeadlockAndSaysWhenItTimesOut) {
  FixtureProcess fx("timed-deadlock");
  const int pid = fx.pid(), a = fx.tid("a"), b = fx.tid("b");
  const auto r = analyzeUntil(pid, hasDeadlock);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(pid, b)}));
  for (const int t : {a, b}) {
    const auto& c = chainOf(r, t);
    EXPECT_TRUE(c.is_cycle);
    ASSERT_TRUE(c.nodes[1].timeout.has_value());
    EXPECT_GT(*c.nodes[1].timeout, std::chrono::minutes(50));
    EXPECT_LE(*c.nodes[1].timeout, std::chrono::hours(1));
  }
  // With a bound longer than the hour left, the same cycle is a loop that will open.
  const auto patient = analyze(pid, AnalyzeOptions{.timed_wait_bound = std::chrono::hours(2)});
  EXPECT_TRUE(patient.deadlocks.empty());
  EXPECT_FALSE(chainOf(patient, a).is_cycle);
}

TEST_F(EngineTest, TwoThreadsWaitingOnTwoRangesOfOneFileEachNameTheirOwnHolder) {
  FixtureProcess fx("two-range-locks");
  const int pid = fx.pid();
  const auto r = analyze(pid, AnalyzeOptions{.out_of_proc = true});
  const auto& low = chainOf(r, fx.tid("low"));
  const auto& high = chainOf(r, fx.tid("high"));
  EXPECT_EQ(low.nodes[1].type, ObjectType::kFileLock);
  EXPECT_EQ(low.nodes[1].owner_pids, (std::vector<Pid>{Pid{fx.child("low")}}));
  EXPECT_NE(low.nodes[1].name.find("[0-9]"), std::string::npos) << low.nodes[1].name;
  EXPECT_EQ(high.nodes[1].owner_pids, (std::vector<Pid>{Pid{fx.child("high")}}));
  EXPECT_NE(high.nodes[1].name.find("[1000-1009]"), std::string::npos) << high.nodes[1].name;
  EXPECT_TRUE(r.deadlocks.empty());
}

TEST_F(EngineTest, AWaitHeldByAProcessWithAnActiveThreadShowsItsThreadsNotACycle) {
  // The reader holds the only write end itself, but its process has another thread that could
  // write: no deadlock, and no cycle mark through the waiter itself.
  FixtureProcess fx("pipe-read-with-sleeper");
  const int pid = fx.pid(), reader = fx.tid("reader");
  const auto r = analyze(pid);
  EXPECT_TRUE(r.deadlocks.empty());
  for (const auto& c : r.chains) EXPECT_FALSE(c.is_cycle) << c.start.tid.value;
  const auto& c = chainOf(r, reader);
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kPipe);
  EXPECT_EQ(c.nodes[1].status, ObjectStatus::kOwned);
  EXPECT_NE(c.nodes[1].detail.find("holder " + std::to_string(pid)), std::string::npos);
  EXPECT_NE(c.nodes[1].detail.find("blocked on Sleep"), std::string::npos) << c.nodes[1].detail;
  // A chain cut short says truncated, never cycle.
  const auto cut = analyze(fx.pid(), AnalyzeOptions{.max_nodes = 1});
  for (const auto& chain : cut.chains) EXPECT_FALSE(chain.is_cycle);
}

TEST_F(EngineTest, AFifoOpenedWithoutAWriterIsNamed) {
  FixtureProcess fx("fifo-no-writer");
  const auto r = analyze(fx.pid());
  const auto& c = chainOf(r, fx.tid("reader"));
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kFifoOpen);
  EXPECT_EQ(c.nodes[1].name, fx.report().at("objects").at("fifo").get<std::string>());
  EXPECT_NE(c.nodes[1].detail.find("waits until a writer opens it"), std::string::npos);
}

TEST_F(EngineTest, AWriterQueuedBehindAnotherOnAReadHeldRwlockIsNamed) {
  FixtureProcess fx("rwlock-writers");
  const auto rw = std::stoull(fx.report().at("objects").at("rw").get<std::string>(), nullptr, 16);
  const auto r = analyze(fx.pid());
  for (const char* writer : {"writer1", "writer2"}) {
    const auto& c = chainOf(r, fx.tid(writer));
    ASSERT_EQ(c.nodes.size(), 2U) << writer;
    EXPECT_EQ(c.nodes[1].type, ObjectType::kRwLock) << writer;
    EXPECT_EQ(c.nodes[1].name, hexString(rw)) << writer;
    EXPECT_EQ(c.nodes[1].status, ObjectStatus::kUnknown) << writer;
  }
  EXPECT_NE(chainOf(r, fx.tid("writer2")).nodes[1].detail.find("behind another writer"),
            std::string::npos);
}

TEST_F(EngineTest, AMutexInheritedLockedThroughForkNamesTheParentsOwner) {
  FixtureProcess fx("fork-mutex");
  const int child = fx.child("child");
  const auto r = analyze(child);
  const auto& c = chainOf(r, child);
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kMutex);
  EXPECT_EQ(c.nodes[1].status, ObjectStatus::kAbandoned);
  const auto& detail = c.nodes[1].detail;
  EXPECT_NE(detail.find("inherited locked through fork()"), std::string::npos) << detail;
  EXPECT_NE(detail.find("thread " + std::to_string(fx.tid("holder"))), std::string::npos);
  EXPECT_NE(detail.find("parent process " + std::to_string(fx.pid())), std::string::npos);
  EXPECT_EQ(detail.find("has exited"), std::string::npos) << detail;
}

TEST_F(EngineTest, WaitTimesAreReadForReportedChainsOnly) {
  const auto started = std::chrono::steady_clock::now();
  FixtureProcess fx("mutex-abba");
  const int pid = fx.pid();
  // The report can come while a thread still naps before its second lock (a sleep is a wait
  // too): the deadlock is waited for, then 300 ms more.
  ASSERT_EQ(analyzeUntil(pid, hasDeadlock).deadlocks.size(), 1U);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto r = analyze(pid);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(r.deadlocks.size(), 1U);
  for (const char* name : {"a", "b"}) {
    const auto& node = chainOf(r, fx.tid(name)).nodes[0];
    ASSERT_TRUE(node.wait_time.has_value()) << name;
    // At least 300 ms passed, never more than the test has run. Each CPU's scheduler clock leaves
    // out its own interrupt and steal time and they drift apart (0.7 s seen between the two of a
    // virtual machine): read against the wrong CPU's, a wait is unreadable or that much too long.
    // The right CPU's clock still reads short by its steal time: allowed up to half.
    EXPECT_GE(*node.wait_time, std::chrono::milliseconds(150)) << name;
    EXPECT_LE(*node.wait_time, elapsed + std::chrono::milliseconds(20)) << name;
  }
  // The reporter idles in a signal wait: its chain leads nowhere, so nothing is read for it.
  for (const auto& c : r.chains) {
    if (!leadsSomewhere(c)) {
      EXPECT_FALSE(c.nodes[0].wait_time.has_value()) << c.start.tid.value;
    }
  }
}

TEST_F(EngineTest, AKernelThreadIsNamedAsSuch) {
  const auto r = analyze(2);
  ASSERT_FALSE(r.chains.empty());
  for (const auto& c : r.chains) {
    for (const auto& n : c.nodes) EXPECT_NE(n.status, ObjectStatus::kError);
    if (c.nodes.size() < 2) continue;
    EXPECT_EQ(c.nodes[1].type, ObjectType::kKernelWait);
    EXPECT_NE(c.nodes[1].detail.find("kernel thread"), std::string::npos);
  }
}

TEST_F(EngineTest, ACachedSampleShowsAProcessRenamedByExecAtOnce) {
  FixtureProcess fx(std::vector<std::string>{"bash", "-c",
                                             R"(echo "{\"pid\":$$,\"threads\":{}}"; read -r _;
exec sleep 600)"},
                    std::chrono::seconds(10));
  auto session = std::move(source_.open(Pid{fx.pid()})).value();
  auto before = sample(*session);
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_EQ(before->processes[0].name, "bash");
  ASSERT_TRUE(fx.tell("go"));
  std::string name;
  for (int i = 0; i < 50 && name != "sleep"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto after = sample(*session);
    ASSERT_TRUE(after.ok()) << after.error().message;
    name = after->processes[0].name;
  }
  EXPECT_EQ(name, "sleep");
}

TEST(ProcessCatalog, AZombieIsNeitherListedNorSampledAsALiveProcess) {
  const pid_t child = ::fork();
  if (child == 0) _exit(0);
  ASSERT_TRUE(testing::waitFor(
      [&] {
        auto stat = linux_platform::readProcessStat(Pid{child});
        return stat && stat->state == RunState::kZombie;
      },
      std::chrono::seconds(10)));
  linux_platform::LinuxProcessCatalog catalog;
  for (int listing = 0; listing < 2; ++listing) {  // the first reads each process, the next reuses
    const auto all = catalog.list(false);
    const auto has = [&](pid_t pid) {
      return std::any_of(all.begin(), all.end(),
                         [&](const ProcessInfo& p) { return p.identity.pid.value == pid; });
    };
    EXPECT_TRUE(has(::getpid()));
    EXPECT_FALSE(has(child)) << "listing " << listing;
  }
  EXPECT_FALSE(catalog.get(Pid{child}, false).has_value());
  linux_platform::SampleContext context;
  linux_platform::ProcessReader reader(context);
  linux_platform::ThreadCache cache;
  for (const auto& read : {reader.read(Pid{child}), reader.readCached(Pid{child}, cache)}) {
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().code, ErrorCode::kNoSuchProcess);
    EXPECT_NE(read.error().message.find("is a zombie"), std::string::npos) << read.error().message;
  }
  ::waitpid(child, nullptr, 0);
}

TEST(StackUnwinder, DebugInformationPastTheBudgetIsLeftOutAndTheFramesKeepTheirNames) {
  // A thread of this process blocked in read(), unwound from what its syscall file shows (as a
  // thread that is not stopped is): its first frame is in libc, whose separate debug file
  // (libc6-dbg) unpacks to about 9 MB.
  std::array<int, 2> pipe_fds{};
  ASSERT_EQ(::pipe(pipe_fds.data()), 0);
  std::atomic<int> tid{0};
  std::thread reader([&] {
    tid = static_cast<int>(::gettid());
    char c = 0;
    (void)!::read(pipe_fds[0], &c, 1);
  });
  std::optional<linux_platform::SyscallState> blocked;
  ASSERT_TRUE(testing::waitFor(
      [&] {
        std::ifstream in("/proc/self/task/" + std::to_string(tid.load()) + "/syscall");
        std::string line;
        std::getline(in, line);
        blocked = linux_platform::parseSyscall(line);
        return tid != 0 && blocked &&
               blocked->kind == linux_platform::SyscallState::Kind::kInSyscall;
      },
      std::chrono::seconds(10)));
  linux_platform::StackCopy copy;
  copy.known = (1U << linux_platform::kDwarfRip) | (1U << linux_platform::kDwarfRsp);
  copy.regs[linux_platform::kDwarfRip] = blocked->pc;
  copy.regs[linux_platform::kDwarfRsp] = blocked->sp;
  copy.sp = blocked->sp;
  copy.bytes.resize(16 * 1024);
  iovec local{copy.bytes.data(), copy.bytes.size()};
  iovec remote{reinterpret_cast<void*>(copy.sp), copy.bytes.size()};
  const ssize_t n = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
  copy.bytes.resize(n > 0 ? static_cast<std::size_t>(n) : 0);

  const Pid self{::getpid()};
  const Tid thread{tid.load()};
  const auto whole = linux_platform::unwindStack(self, thread, copy, {.max_frames = 16});
  const auto bounded =
      linux_platform::unwindStack(self, thread, copy, {.max_frames = 16, .unpack_bytes = 1 << 20});
  ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);
  reader.join();
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);

  ASSERT_FALSE(whole.frames.empty()) << whole.error;
  ASSERT_FALSE(bounded.frames.empty()) << bounded.error;
  EXPECT_NE(whole.frames[0].module.find("libc.so"), std::string::npos) << whole.frames[0].module;
  EXPECT_FALSE(whole.frames[0].file.empty()) << "libc6-dbg gives libc's frames a source line";
  EXPECT_TRUE(whole.note.empty()) << whole.note;

  EXPECT_EQ(bounded.frames[0].pc, whole.frames[0].pc);
  EXPECT_EQ(bounded.frames[0].module, whole.frames[0].module);
  EXPECT_FALSE(bounded.frames[0].function.empty()) << "named from libc's own symbols";
  EXPECT_TRUE(bounded.frames[0].file.empty()) << bounded.frames[0].file;
  EXPECT_NE(bounded.note.find("libc.so"), std::string::npos) << bounded.note;
  EXPECT_NE(bounded.note.find("/usr/lib/debug/"), std::string::npos) << bounded.note;
  EXPECT_EQ(bounded.note.find("libc.so"), bounded.note.rfind("libc.so")) << "named once";
  EXPECT_NE(bounded.note.find("over what one unwinding may take"), std::string::npos)
      << bounded.note;
}

}  // namespace
}  // namespace wctmon

namespace wctmon {
namespace {

/// The state letter of thread `tid` of process `pid` ('S', 't', ...).
char threadState(int pid, int tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

TEST_F(EngineTest, ADeadlockHeldByADebuggerIsStillADeadlock) {
  // gdb -p stops every thread in a tracing stop for as long as it is attached; they go back to
  // their lock calls when it detaches, so the deadlock goes on meanwhile.
  FixtureProcess fx("mutex-abba", "normal");
  const int pid = fx.pid(), a = fx.tid("a"), b = fx.tid("b");
  ASSERT_EQ(analyzeUntil(pid, hasDeadlock).deadlocks.size(), 1U);
  const pid_t gdb = ::fork();
  if (gdb == 0) {
    // A group of its own, and not the test's output: what gdb starts (its shell, the sleep) must
    // neither outlive the test nor hold the test runner's pipe open.
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execlp("gdb", "gdb", "-q", "-nx", "-batch", "-p", std::to_string(pid).c_str(), "-ex",
             "shell sleep 4", nullptr);
    _exit(127);
  }
  ::setpgid(gdb, gdb);
  for (int i = 0; i < 200 && threadState(pid, a) != 't'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(threadState(pid, a), 't');
  ASSERT_EQ(threadState(pid, b), 't');
  const auto r = analyze(pid);
  ASSERT_EQ(r.deadlocks.size(), 1U);
  EXPECT_EQ(r.deadlocks[0].threads, (std::vector<ThreadRef>{ref(pid, a), ref(pid, b)}));
  const auto& c = chainOf(r, a);
  expectWaitsOn(c, ObjectType::kMutex, ref(pid, b));
  EXPECT_NE(c.nodes[1].detail.find("tracing stop by process " + std::to_string(gdb)),
            std::string::npos)
      << c.nodes[1].detail;
  ::kill(-gdb, SIGKILL);
  ::waitpid(gdb, nullptr, 0);
}

TEST_F(EngineTest, IdleParkersWithAReadHeldRwlockShapeAreConditionWaits) {
  // A mutex and a condition variable per thread, zeroes after them (HotSpot's Parker, many
  // pools), after an odd number of wakeups: the words look like a rwlock held by readers.
  FixtureProcess fx("parker-pool");
  const auto r = analyze(fx.pid());
  for (int i = 0; i < 4; ++i) {
    const auto& c = chainOf(r, fx.tid("worker" + std::to_string(i)));
    ASSERT_EQ(c.nodes.size(), 2U) << i;
    EXPECT_EQ(c.nodes[1].type, ObjectType::kCondition) << c.nodes[1].detail;
    EXPECT_EQ(c.nodes[1].status, ObjectStatus::kBlocked);
  }
  EXPECT_TRUE(r.deadlocks.empty());
}

TEST_F(EngineTest, SysvSemaphoreCycleNamesTheSetTheSemaphoresAndTheirLastUsers) {
  FixtureProcess fx("sysv-sem-abba");
  const int pid = fx.pid(), child = fx.child("child");
  const auto set = fx.report()["objects"]["set"].get<std::string>();
  struct RemoveSet {
    int id;
    ~RemoveSet() { ::semctl(id, 0, IPC_RMID); }
  } remove_set{std::stoi(set)};
  const auto r = analyze(pid, AnalyzeOptions{.out_of_proc = true});
  const auto& c = chainOf(r, pid);
  ASSERT_EQ(c.nodes.size(), 2U);
  EXPECT_EQ(c.nodes[1].type, ObjectType::kUnownedLock);
  EXPECT_EQ(c.nodes[1].name, "SysV semaphore set " + set + ", semaphore 1");
  EXPECT_NE(c.nodes[1].detail.find("semaphore 1 by pid " + std::to_string(child)),
            std::string::npos)
      << c.nodes[1].detail;
  EXPECT_TRUE(leadsSomewhere(c));
}

TEST_F(EngineTest, SemaphoreAbbaNamesBothWaitsAsLocksWithoutOwner) {
  FixtureProcess fx("sem-abba");
  const auto r = analyze(fx.pid());
  for (const char* name : {"a", "b"}) {
    const auto& c = chainOf(r, fx.tid(name));
    ASSERT_EQ(c.nodes.size(), 2U) << name;
    EXPECT_EQ(c.nodes[1].type, ObjectType::kUnownedLock) << name;
    EXPECT_NE(c.nodes[1].name.find("POSIX semaphore"), std::string::npos) << c.nodes[1].name;
    EXPECT_TRUE(leadsSomewhere(c));
  }
}

}  // namespace
}  // namespace wctmon
