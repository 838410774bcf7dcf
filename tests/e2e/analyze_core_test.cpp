// `wctmon analyze --core`: the deadlocks of real processes, from cores gdb's gcore wrote of them
// and from cores of `wctmon dump`; what a core cannot tell, said; files that are no core.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using testing::FixtureProcess;
using testing::runCommand;
using testing::runWctmon;
using testing::TempDir;
using testing::wctmonPath;

/// A core of the fixture, written by gcore (which stops and resumes the process).
std::string gcore(const FixtureProcess& fx, const TempDir& dir) {
  const auto prefix = (dir / "gcore").string();
  const auto r = runCommand({"gcore", "-o", prefix, std::to_string(fx.pid())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return prefix + "." + std::to_string(fx.pid());
}

std::set<int> tidsOf(const nlohmann::json& threads) {
  std::set<int> out;
  for (const auto& t : threads) out.insert(t.at("tid").get<int>());
  return out;
}

/// The one deadlock of a JSON analysis, its threads by TID.
std::set<int> onlyDeadlock(const nlohmann::json& analysis) {
  const auto& deadlocks = analysis.at("deadlocks");
  EXPECT_EQ(deadlocks.size(), 1U) << analysis.dump();
  return deadlocks.empty() ? std::set<int>{} : tidsOf(deadlocks[0].at("threads"));
}

/// The chain of thread `tid` in a JSON analysis.
nlohmann::json chainOf(const nlohmann::json& analysis, int tid) {
  for (const auto& chain : analysis.at("chains")) {
    if (chain.at("tid").get<int>() == tid) return chain;
  }
  ADD_FAILURE() << "no chain of thread " << tid << " in " << analysis.dump();
  return {};
}

/// The owner TID of the object node of the chain of thread `tid` (its second node, followed by
/// the owner thread).
int ownerInChain(const nlohmann::json& analysis, int tid) {
  const auto chain = chainOf(analysis, tid);
  if (!chain.contains("nodes") || chain["nodes"].size() < 3) return 0;
  return chain["nodes"][2].at("tid").get<int>();
}

void expectCycleOf(const std::string& scenario, const std::string& arg, const std::string& first,
                   const std::string& second, const std::string& kind) {
  FixtureProcess fx(scenario, arg);
  const int pid = fx.pid();
  TempDir dir("analyze-core");
  const auto core = gcore(fx, dir);
  fx.kill();  // the core is all there is from here on

  const auto text = runWctmon({"analyze", "--core", core});
  EXPECT_EQ(text.exit_code, 3) << text.err << text.out;
  EXPECT_NE(text.out.find("1 deadlock"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(kind), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("<== CYCLE"), std::string::npos) << text.out;

  const auto json = runWctmon({"analyze", "--core", core, "--json"});
  ASSERT_EQ(json.exit_code, 3) << json.err;
  const auto analysis = nlohmann::json::parse(json.out);
  EXPECT_EQ(analysis.at("pid").get<int>(), pid);
  EXPECT_EQ(onlyDeadlock(analysis), (std::set<int>{fx.tid(first), fx.tid(second)}));
  // Each waits on what the other owns.
  EXPECT_EQ(ownerInChain(analysis, fx.tid(first)), fx.tid(second));
  EXPECT_EQ(ownerInChain(analysis, fx.tid(second)), fx.tid(first));
}

TEST(AnalyzeCore, AMutexAbbaInAGcoreCoreIsADeadlockOfItsTwoThreads) {
  expectCycleOf("mutex-abba", "", "a", "b", "[Mutex 0x");
}

TEST(AnalyzeCore, APriorityInheritanceAbbaIsFoundThroughTheRegistersOfTheParkedThread) {
  // glibc parks the thread the kernel refused (EDEADLK) on a futex of its own stack: only the
  // registers the core keeps say which mutex it wanted.
  expectCycleOf("mutex-abba", "pi", "a", "b", "priority-inheritance");
}

TEST(AnalyzeCore, AJoinCycleIsADeadlockOfTheJoinerAndTheJoined) {
  expectCycleOf("join-cycle", "", "main", "a", "pthread_join");
}

TEST(AnalyzeCore, AnAbbaWithAnHourLongTimeoutHasTheTimeLeftWhenTheCoreWasWritten) {
  // The timeout is absolute (pthread_mutex_clocklock): what is left of it is measured from the
  // core's time, not from the clock of the analysis.
  expectCycleOf("timed-deadlock", "", "a", "b", "times out in 59m");
}

TEST(AnalyzeCore, APythonRLockAbbaIsADeadlockFromTheInterpreterStateInTheCore) {
  // CPython's RLock records its owner's pthread_t; the interpreter's thread states, read from the
  // core's memory, turn it into a thread.
  FixtureProcess fx(std::vector<std::string>{"/usr/bin/python3.11", "-c", R"(
import json, os, threading, time
a, b = threading.RLock(), threading.RLock()
ids = {}
def run(name, first, second):
    ids[name] = threading.get_native_id()
    with first:
        time.sleep(0.3)
        with second: pass
for name, first, second in (("first", a, b), ("second", b, a)):
    threading.Thread(target=run, args=(name, first, second), daemon=True).start()
time.sleep(0.8)
print(json.dumps({"pid": os.getpid(), "threads": ids, "processes": {}}), flush=True)
time.sleep(600)
)"},
                    std::chrono::seconds(20));
  TempDir dir("analyze-core");
  const auto core = gcore(fx, dir);
  const auto json = runWctmon({"analyze", "--core", core, "--json"});
  ASSERT_EQ(json.exit_code, 3) << json.err << json.out;
  const auto analysis = nlohmann::json::parse(json.out);
  EXPECT_EQ(onlyDeadlock(analysis), (std::set<int>{fx.tid("first"), fx.tid("second")}));
  const auto text = runWctmon({"analyze", "--core", core});
  EXPECT_NE(text.out.find("Python threading.RLock 0x"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("innermost Python frame: run at <string>:"), std::string::npos)
      << text.out;
}

TEST(AnalyzeCore, ACoreTheKernelWroteOnAFatalSignalHoldsTheDeadlockItDiedIn) {
  const auto pattern = testing::readFile("/proc/sys/kernel/core_pattern");
  if (pattern != "core\n") GTEST_SKIP() << "the kernel writes cores elsewhere: " << pattern;
  TempDir dir("analyze-core");
  FixtureProcess fx(
      std::vector<std::string>{"bash", "-c",
                               "cd " + dir.path().string() + " && ulimit -c unlimited && exec " +
                                   testing::fixturePath() + " mutex-abba"},
      std::chrono::seconds(20));
  const int pid = fx.pid();
  const std::set<int> cycle{fx.tid("a"), fx.tid("b")};
  ASSERT_EQ(::kill(pid, SIGABRT), 0);
  for (int i = 0; i < 200 && !fx.reapIfExited(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto core = dir / "core";
  if (!std::filesystem::exists(core)) core = dir / ("core." + std::to_string(pid));
  ASSERT_TRUE(std::filesystem::exists(core)) << "no core in " << dir.path();

  const auto json = runWctmon({"analyze", "--core", core.string(), "--json"});
  ASSERT_EQ(json.exit_code, 3) << json.err << json.out;
  const auto analysis = nlohmann::json::parse(json.out);
  EXPECT_EQ(onlyDeadlock(analysis), cycle);
  // Besides the signal, at most the note that pipe waits are not knowable from a core: the
  // fixture's reporter may still have been writing its report when the signal came.
  for (const auto& w : analysis.at("warnings")) {
    const auto text = w.get<std::string>();
    EXPECT_TRUE(text.rfind("the core was written on SIGABRT", 0) == 0 ||
                text.find("not knowable from a core") != std::string::npos)
        << text;
  }
  EXPECT_NE(analysis.dump().find("the core was written on SIGABRT, taken by thread " +
                                 std::to_string(pid)),
            std::string::npos)
      << analysis.at("warnings");
}

TEST(AnalyzeCore, APipeReadSaysItsHoldersAreNotKnowableFromACore) {
  FixtureProcess fx("pipe-read");
  TempDir dir("analyze-core");
  const auto core = gcore(fx, dir);
  const auto text = runWctmon({"analyze", "--core", core});
  EXPECT_EQ(text.exit_code, 0) << text.err << text.out;
  EXPECT_NE(text.out.find("0 deadlocks"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("read on fd"), std::string::npos) << text.out;

  const auto json = runWctmon({"analyze", "--core", core, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto chain = chainOf(nlohmann::json::parse(json.out), fx.tid("reader"));
  ASSERT_GE(chain.at("nodes").size(), 2U) << chain.dump();
  const auto& node = chain["nodes"][1];
  EXPECT_NE(node.at("detail").get<std::string>().find("not knowable from a core"),
            std::string::npos)
      << node.dump();
  EXPECT_EQ(node.value("status", ""), "OBJECT_STATUS_UNKNOWN") << node.dump();
  EXPECT_FALSE(node.contains("owner_pids") && !node["owner_pids"].empty()) << node.dump();
}

TEST(AnalyzeCore, ACoreOfWctmonDumpShowsTheRecordedDiagnosisBesideTheFreshOne) {
  FixtureProcess fx("mutex-abba");
  TempDir dir("analyze-core");
  const auto core = (dir / "abba.core").string();
  ASSERT_EQ(runWctmon({"dump", "--pid", std::to_string(fx.pid()), "--out", core}).exit_code, 3);
  fx.kill();

  const auto text = runWctmon({"analyze", "--core", core});
  EXPECT_EQ(text.exit_code, 3) << text.err << text.out;
  EXPECT_NE(text.out.find("1 deadlock"), std::string::npos) << text.out;
  const auto recorded_at = text.out.find("Recorded when the dump was taken");
  ASSERT_NE(recorded_at, std::string::npos) << text.out;
  const auto tids = std::to_string(std::min(fx.tid("a"), fx.tid("b"))) + ", " +
                    std::to_string(std::max(fx.tid("a"), fx.tid("b")));
  EXPECT_NE(text.out.find("deadlock: threads " + tids, recorded_at), std::string::npos) << text.out;

  const auto json = runWctmon({"analyze", "--core", core, "--json"});
  ASSERT_EQ(json.exit_code, 3) << json.err;
  const auto both = nlohmann::json::parse(json.out);
  const std::set<int> cycle{fx.tid("a"), fx.tid("b")};
  EXPECT_EQ(onlyDeadlock(both.at("analysis")), cycle);
  EXPECT_EQ(onlyDeadlock(both.at("recorded")), cycle);

  // A gcore core carries no diagnosis: its JSON is shaped as a live analysis's.
}

TEST(AnalyzeCore, ExeNamesTheExecutableWhenThePathInTheCoreIsGone) {
  TempDir dir("analyze-core");
  const auto moved = dir / "moved";
  std::filesystem::create_directories(moved);
  const auto copy = moved / "wctmon-fixture";
  std::filesystem::copy_file(testing::fixturePath(), copy);
  FixtureProcess fx(std::vector<std::string>{copy.string(), "mutex-abba"},
                    std::chrono::seconds(20));
  const auto core = gcore(fx, dir);
  fx.kill();
  std::filesystem::remove(copy);

  const auto without = runWctmon({"analyze", "--core", core});
  EXPECT_NE(without.out.find(copy.string()), std::string::npos) << without.out;
  EXPECT_NE(without.out.find("--exe"), std::string::npos) << without.out;

  const auto with = runWctmon({"analyze", "--core", core, "--exe", testing::fixturePath()});
  EXPECT_EQ(with.exit_code, 3) << with.err << with.out;
  EXPECT_NE(with.out.find("1 deadlock"), std::string::npos) << with.out;
  EXPECT_EQ(with.out.find("--exe"), std::string::npos) << with.out;
  EXPECT_EQ(with.out.find(copy.string()), std::string::npos) << with.out;

  const auto missing = runWctmon({"analyze", "--core", core, "--exe", (dir / "none").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("is not a file"), std::string::npos) << missing.err;
}

TEST(AnalyzeCore, AFileThatIsNoCoreOrACoreCutShortIsOneClearError) {
  TempDir dir("analyze-core");
  std::ofstream(dir / "text") << "not a core";
  auto r = runWctmon({"analyze", "--core", (dir / "text").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no ELF file"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = runWctmon({"analyze", "--core", wctmonPath()});  // an ELF file, but an executable
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no 64-bit little-endian core"), std::string::npos) << r.err;

  r = runWctmon({"analyze", "--core", (dir / "none").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;

  FixtureProcess fx("mutex-abba");
  const auto core = gcore(fx, dir);
  fx.kill();
  const auto whole = testing::readFile(core);
  std::filesystem::resize_file(core, whole.size() / 2);
  r = runWctmon({"analyze", "--core", core});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("cut short"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  // Another machine's core: e_machine says so.
  auto bytes = whole;
  bytes[18] = static_cast<char>(183);  // EM_AARCH64
  bytes[19] = 0;
  std::ofstream(core, std::ios::binary | std::ios::trunc) << bytes;
  r = runWctmon({"analyze", "--core", core});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("only x86-64 cores"), std::string::npos) << r.err;

  EXPECT_EQ(runWctmon({"analyze", "--core", core, "--pid", "1"}).exit_code, 2);
  EXPECT_EQ(runWctmon({"analyze", "--exe", wctmonPath()}).exit_code, 2);
  EXPECT_EQ(runWctmon({"analyze", "--core", core, "--capture"}).exit_code, 2);
  EXPECT_EQ(runWctmon({"analyze", "--core", core, "--out-of-proc"}).exit_code, 2);
}

}  // namespace
}  // namespace wctmon
