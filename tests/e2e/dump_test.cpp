// `wctmon dump`: a dump of a real deadlocked process, its diagnosis inside and beside it, and a
// dump killed at any moment.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
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
using testing::TempDir;
using testing::wctmonPath;

CommandResult wctmon(std::vector<std::string> args) { return testing::runWctmon(std::move(args)); }

TEST(Dump, ADeadlockedProcessIsDumpedWithItsDiagnosisInsideAndBeside) {
  FixtureProcess fx("mutex-abba");
  TempDir dir("dump");
  const auto core = dir / "abba.core";
  const auto r = wctmon({"dump", "--pid", std::to_string(fx.pid()), "--out", core.string()});
  ASSERT_EQ(r.exit_code, 3) << r.err << r.out;  // the diagnosis holds the deadlock
  EXPECT_NE(r.out.find("wrote " + core.string() + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held for their registers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 deadlock(s)"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(core.string() + ".partial"));

  // Inside: what `dump info` reads back is the analysis, deadlock and all; beside: the same.
  const auto info = wctmon({"dump", "info", core.string()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto diagnosis = nlohmann::json::parse(info.out);
  ASSERT_EQ(diagnosis.at("deadlocks").size(), 1U);
  std::set<int> cycle;
  for (const auto& t : diagnosis["deadlocks"][0].at("threads"))
    cycle.insert(t.at("tid").get<int>());
  EXPECT_EQ(cycle, (std::set<int>{fx.tid("a"), fx.tid("b")}));
  EXPECT_EQ(nlohmann::json::parse(testing::readFile(core.string() + ".json")), diagnosis);
  struct stat st {};
  ASSERT_EQ(::stat((core.string() + ".json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);

  // A second dump never replaces the first.
  const auto again = wctmon({"dump", "--pid", std::to_string(fx.pid()), "--out", core.string()});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("File exists"), std::string::npos) << again.err;
}

TEST(Dump, InfoOfAFileThatIsNoDumpOrCarriesNoDiagnosisSaysSo) {
  TempDir dir("dump");
  std::ofstream(dir / "text") << "not a dump";
  auto r = wctmon({"dump", "info", (dir / "text").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("neither an ELF core nor a minidump"), std::string::npos) << r.err;

  // A core the kernel's way (gcore): a dump, with no diagnosis of ours.
  FixtureProcess fx("mutex-abba");
  const auto gcore = dir / "gcore";
  ASSERT_EQ(runCommand({"gcore", "-o", gcore.string(), std::to_string(fx.pid())}).exit_code, 0);
  r = wctmon({"dump", "info", gcore.string() + "." + std::to_string(fx.pid())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("carries no wctmon diagnosis"), std::string::npos) << r.err;

  EXPECT_EQ(wctmon({"dump"}).exit_code, 2);
  EXPECT_EQ(wctmon({"dump", "--pid", "4194304", "--out", (dir / "none").string()}).exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir / "none"));
}

TEST(Dump, ADumpKilledAtAnyMomentNeverLeavesAThreadStopped) {
  // 100 rounds: `wctmon dump` of a real deadlock, SIGKILLed at a random moment of its run (which
  // holds each thread of the process in turn for its registers). The kernel detaches a dead
  // tracer's tracees; none may stay in a tracing or job-control stop.
  FixtureProcess fx("mutex-abba");
  TempDir dir("dump");
  const auto seed = std::random_device{}();
  std::mt19937 random(seed);
  const std::string pid = std::to_string(fx.pid());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(wctmon({"dump", "--pid", pid, "--out", (dir / "whole").string()}).exit_code, 3);
  const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  std::uniform_int_distribution<std::int64_t> when(0, 2 * whole.count());
  for (int round = 0; round < 100; ++round) {
    const auto out = (dir / ("round-" + std::to_string(round))).string();
    const pid_t tool = ::fork();
    if (tool == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::execl(wctmonPath(), wctmonPath(), "dump", "--pid", pid.c_str(), "--out", out.c_str(),
              nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(when(random)));
    ::kill(tool, SIGKILL);
    ::waitpid(tool, nullptr, 0);
    for (const auto& [tid, state] : testing::threadStates(fx.pid())) {
      ASSERT_TRUE(state != 't' && state != 'T')
          << "thread " << tid << " left in state " << state << " in round " << round << " (seed "
          << seed << ")";
    }
    std::filesystem::remove(out);
    std::filesystem::remove(out + ".partial");
    std::filesystem::remove(out + ".json");
  }
  EXPECT_EQ(wctmon({"analyze", "--pid", pid}).exit_code, 3) << "the deadlock is what it was";
}

}  // namespace
}  // namespace wctmon
