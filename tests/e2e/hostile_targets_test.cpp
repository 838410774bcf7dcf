// Targets that behave as no well-made program does, analysed by `wctmon analyze` as operators
// run it: the memory holding a lock moves and vanishes under the reader, the process replaces its
// image every millisecond, a debugger holds every thread. Each gets a clear answer; none crashes
// the tool, makes it name a thread that does not own the lock, or leaves a thread stopped. And a
// pid that a new process takes while the service watches the old one's deadlock.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using testing::CommandResult;
using testing::FixtureProcess;
using testing::runCommand;
using testing::threadStates;
using testing::waitFor;
using testing::wctmonPath;

CommandResult analyze(std::vector<std::string> args) {
  std::vector<std::string> argv{wctmonPath(), "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

/// The TracerPid of thread `tid` of `pid` (0: not traced; -1: gone).
int tracerOf(pid_t pid, int tid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("TracerPid:", 0) == 0) return std::stoi(line.substr(10));
  }
  return -1;
}

void expectNoThreadStopped(pid_t pid) {
  for (const auto& [tid, state] : threadStates(pid)) {
    EXPECT_TRUE(state != 't' && state != 'T') << "thread " << tid << " left in state " << state;
  }
}

TEST(HostileTargets, ALockWhoseMemoryMovesAndVanishesUnderTheReaderIsNeverPinnedOnAnotherThread) {
  // Two threads deadlock on two mutexes in one page that a third thread keeps moving away and
  // back (mremap) and making unreadable (mprotect). A read that finds the page gone says the
  // owner is unknown (no deadlock this time); one that finds it home names the real owners.
  FixtureProcess fx("remap-abba");
  const std::set<int> owners{fx.tid("a"), fx.tid("b")};
  int deadlocks = 0;
  for (int round = 0; round < 60; ++round) {
    const auto r = analyze({"--pid", std::to_string(fx.pid()), "--json"});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << "round " << round << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const auto& chain : j["chains"]) {
      const auto& nodes = chain["nodes"];
      // Node 0 is the thread the chain starts at; every later thread node owns what the node
      // before it waits on.
      for (std::size_t i = 1; i < nodes.size(); ++i) {
        if (nodes[i]["object_type"] != "OBJECT_TYPE_THREAD") continue;
        EXPECT_TRUE(owners.count(nodes[i]["tid"].get<int>()) == 1)
            << "round " << round << ": thread " << nodes[i]["tid"] << " named as the owner of "
            << nodes[i - 1]["name"];
      }
    }
    if (r.exit_code == 3) {
      ++deadlocks;
      ASSERT_EQ(j["deadlocks"].size(), 1U);
      std::set<int> cycle;
      for (const auto& t : j["deadlocks"][0]["threads"]) cycle.insert(t["tid"].get<int>());
      EXPECT_EQ(cycle, owners) << "round " << round;
    }
  }
  // The page is home most of the time: the deadlock is seen in some rounds at least.
  EXPECT_GT(deadlocks, 0);
  expectNoThreadStopped(fx.pid());
}

TEST(HostileTargets, AProcessThatExecsEveryMillisecondGetsAClearAnswerEveryTime) {
  FixtureProcess fx("exec-loop");
  const std::string pid = std::to_string(fx.pid());
  for (int round = 0; round < 40; ++round) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = analyze({"--pid", pid, "--capture"});
    const auto took = std::chrono::steady_clock::now() - start;
    // Either an analysis of one image (no deadlock) or one line saying why there is none; never
    // a signal, never a hang.
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1)
        << "round " << round << ": exit " << r.exit_code << ": " << r.err;
    if (r.exit_code == 1) {
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
      EXPECT_EQ(r.err.rfind("wctmon: ", 0), 0U) << r.err;
    }
    EXPECT_LT(took, std::chrono::seconds(5)) << "round " << round;
  }
  expectNoThreadStopped(fx.pid());
}

TEST(HostileTargets, ADeadlockHeldByADebuggerIsStillOneAndNeitherCapturedNorWaitedFor) {
  FixtureProcess fx("mutex-abba");
  const std::string pid = std::to_string(fx.pid());
  // gdb attaches (stopping every thread), runs a shell command for a while, then detaches.
  const pid_t gdb = ::fork();
  if (gdb == 0) {
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execlp("gdb", "gdb", "-nx", "-batch", "-p", pid.c_str(), "-ex", "shell sleep 5", nullptr);
    _exit(127);
  }
  ASSERT_TRUE(
      waitFor([&] { return tracerOf(fx.pid(), fx.tid("a")) == gdb; }, std::chrono::seconds(20)))
      << "gdb did not attach";

  const auto start = std::chrono::steady_clock::now();
  const auto r = analyze({"--pid", pid, "--capture", "--json"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(3));
  // Every thread is in a tracing stop in the middle of its lock call, which it goes back to when
  // gdb lets go: the deadlock goes on, is said to be held by the debugger, and nothing is
  // captured (the debugger holds the threads).
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deadlocks"].size(), 1U) << r.out;
  bool said_traced = false;
  for (const auto& chain : j["chains"]) {
    for (const auto& node : chain["nodes"]) {
      if (node.value("detail", "").find("tracing stop by process " + std::to_string(gdb)) !=
          std::string::npos) {
        said_traced = true;
      }
    }
  }
  EXPECT_TRUE(said_traced) << r.out;
  for (const auto& c : j["captures"]) {
    EXPECT_FALSE(c["captured"].get<bool>()) << c;
    EXPECT_EQ(c["tracer_pid"].get<int>(), gdb) << c;
  }

  // Once gdb detaches, the deadlock is what it was and is captured in full.
  int status = 0;
  ASSERT_EQ(::waitpid(gdb, &status, 0), gdb);
  ASSERT_TRUE(
      waitFor([&] { return tracerOf(fx.pid(), fx.tid("a")) == 0; }, std::chrono::seconds(10)));
  const auto after = analyze({"--pid", pid, "--capture", "--json"});
  ASSERT_EQ(after.exit_code, 3) << after.err;
  const auto captured = nlohmann::json::parse(after.out);
  ASSERT_EQ(captured["captures"].size(), 2U) << after.out;
  for (const auto& c : captured["captures"]) EXPECT_TRUE(c["captured"].get<bool>()) << c;
  expectNoThreadStopped(fx.pid());
}

TEST(HostileTargets, APidTakenByANewProcessBetweenTwoSamplesIsANewProcessWithItsOwnIncident) {
  // tests/e2e/pid_reuse.py, in a PID namespace of its own: a deadlocked process is killed and its
  // pid given at once to another that deadlocks with the same thread ids, before the service
  // samples again. Its process start time tells them apart: the first incident is resolved as
  // exited, the second is a new one, never the first one carried on.
  testing::TempDir dir("pid-reuse");
  const auto r =
      runCommand({"unshare", "--pid", "--fork", "--mount-proc", "/usr/bin/python3",
                  WCTMON_PID_REUSE, wctmonPath(), testing::fixturePath(), dir.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto result = nlohmann::json::parse(r.out);
  RecordProperty("result", result.dump());
  ASSERT_EQ(result["second_pid"], result["first_pid"]) << result.dump();
  EXPECT_TRUE(result["first_opened"].get<bool>()) << result.dump();
  EXPECT_TRUE(result["first_resolved"].get<bool>()) << result.dump();
  EXPECT_TRUE(result["second_opened"].get<bool>()) << result.dump();
  const auto& incidents = result["incidents"];
  ASSERT_EQ(incidents.size(), 2U) << result.dump();
  const auto& second = incidents[0];  // the latest first
  const auto& first = incidents[1];
  EXPECT_EQ(first["state"], "INCIDENT_STATE_RESOLVED");
  EXPECT_EQ(first["resolution"], "the process exited");
  EXPECT_EQ(second["state"], "INCIDENT_STATE_OPEN");
  EXPECT_NE(first["process_start_time"], second["process_start_time"]);
  EXPECT_NE(first["id"], second["id"]);
}

}  // namespace
}  // namespace wctmon
