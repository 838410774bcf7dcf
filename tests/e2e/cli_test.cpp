// wctmon analyze as operators run it: exit codes, JSON shape, human output, privileges.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/subprocess.h"

namespace wctmon {
namespace {

using testing::CommandResult;
using testing::FixtureProcess;
using testing::runCommand;
using testing::wctmonPath;

CommandResult analyze(std::vector<std::string> args) {
  std::vector<std::string> argv{wctmonPath(), "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

TEST(Cli, DeadlockExitsThreeWithProtoJson) {
  FixtureProcess fx("mutex-abba");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pid"], fx.pid());
  EXPECT_EQ(j["thread_count"], 4);  // main, a, b and the fixture's reporter
  ASSERT_EQ(j["deadlocks"].size(), 1U);
  const auto& threads = j["deadlocks"][0]["threads"];
  ASSERT_EQ(threads.size(), 2U);
  EXPECT_EQ(threads[0]["pid"], fx.pid());
  EXPECT_EQ(threads[0]["tid"], fx.tid("a"));
  EXPECT_EQ(threads[1]["tid"], fx.tid("b"));
  ASSERT_EQ(j["chains"].size(), 4U);
  bool found = false;
  for (const auto& chain : j["chains"]) {
    EXPECT_EQ(chain["pid"], fx.pid());
    if (chain["tid"] != fx.tid("a")) continue;
    found = true;
    EXPECT_TRUE(chain["is_cycle"].get<bool>());
    const auto& nodes = chain["nodes"];
    ASSERT_EQ(nodes.size(), 5U);
    EXPECT_EQ(nodes[0]["object_type"], "OBJECT_TYPE_THREAD");
    EXPECT_EQ(nodes[0]["tid"], fx.tid("a"));
    EXPECT_EQ(nodes[0]["thread_name"], "a");
    EXPECT_EQ(nodes[1]["object_type"], "OBJECT_TYPE_MUTEX");
    EXPECT_EQ(nodes[1]["status"], "OBJECT_STATUS_OWNED");
    EXPECT_EQ(nodes[1]["name"], fx.report()["objects"]["m2"]);
    EXPECT_EQ(nodes[2]["tid"], fx.tid("b"));
  }
  EXPECT_TRUE(found);
}

TEST(Cli, HumanOutputStartsWithTheSummaryAndMarksTheCycle) {
  FixtureProcess fx("mutex-abba");
  const auto r = analyze({"--pid", std::to_string(fx.pid())});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const std::string pid = std::to_string(fx.pid());
  EXPECT_EQ(r.out.rfind("process " + pid + " (wctmon-fixture): 4 threads, 1 deadlock", 0), 0U)
      << r.out;
  EXPECT_NE(r.out.find("DEADLOCK #1: [" + pid + ":" + std::to_string(fx.tid("a")) + "]"),
            std::string::npos);
  EXPECT_NE(r.out.find("<== CYCLE"), std::string::npos);
}

TEST(Cli, NoDeadlockExitsZero) {
  FixtureProcess fx("ownerless");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["deadlocks"].empty());
}

TEST(Cli, UnknownProcessExitsOneWithAClearMessage) {
  const auto r = analyze({"--pid", "2147483000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "wctmon: no such process: 2147483000\n");
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(runCommand({wctmonPath()}).exit_code, 2);
  EXPECT_EQ(analyze({}).exit_code, 2);
  EXPECT_EQ(analyze({"--pid", "abc"}).exit_code, 2);
  EXPECT_EQ(analyze({"--pid", "1", "--all"}).exit_code, 2);
  EXPECT_EQ(analyze({"--pid", "1", "--max-nodes", "0"}).exit_code, 2);
  EXPECT_EQ(analyze({"--bogus"}).exit_code, 2);
  EXPECT_EQ(runCommand({wctmonPath(), "--help"}).exit_code, 0);
}

/// A copy of the wctmon binary that any user can run, whatever the permissions of the build tree.
class WorldExecutableCopy {
 public:
  WorldExecutableCopy() {
    char dir[] = "/tmp/wctmon-e2e-XXXXXX";
    if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/wctmon";
    std::filesystem::copy_file(wctmonPath(), path_);
    std::filesystem::permissions(dir_, std::filesystem::perms(0755));
    std::filesystem::permissions(path_, std::filesystem::perms(0755));
  }
  ~WorldExecutableCopy() { std::filesystem::remove_all(dir_); }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

TEST(Cli, UnprivilegedAnalysisOfARootProcessGetsNoAccess) {
  FixtureProcess fx("mutex-abba");
  const WorldExecutableCopy binary;
  const auto r =
      runCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary.path(),
                  "analyze", "--pid", std::to_string(fx.pid()), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["chains"].empty());
  for (const auto& chain : j["chains"]) {
    EXPECT_EQ(chain["nodes"][0]["status"], "OBJECT_STATUS_NO_ACCESS");
  }
  EXPECT_TRUE(j["deadlocks"].empty());
}

TEST(Cli, CaptureReportsRegistersStacksAndStopTimes) {
  FixtureProcess fx("mutex-abba");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--capture", "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["captures"].size(), 2U);
  for (const auto& c : j["captures"]) {
    EXPECT_TRUE(c["captured"].get<bool>()) << c.dump();
    EXPECT_GT(std::stoull(c["stop_time_ns"].get<std::string>()), 0U);
    EXPECT_FALSE(c["frames"].empty());
    EXPECT_EQ(c["registers"][0]["name"], "rip");
  }
}

TEST(Cli, AllProcessesFindsTheFixtureDeadlock) {
  FixtureProcess fx("pipe-deadlock");
  const auto r = analyze({"--all", "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pid"], 0);
  bool found = false;
  for (const auto& d : j["deadlocks"]) {
    for (const auto& t : d["threads"]) found = found || t["pid"] == fx.pid();
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace wctmon
