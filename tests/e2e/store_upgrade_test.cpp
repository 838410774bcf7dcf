// A store the previous version of the service wrote (schema version 2, chains and evidence as
// JSON), upgraded by this service as it starts; and `wctmon incidents` on a store with a damaged
// row, which it names rather than hides.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::runCommand;
using testing::wctmonPath;

/// A state directory holding the store in tests/store/data/incidents-v2.sql: a deadlock of two
/// threads (resolved) and one of two processes (open), as the previous version caught them.
class OldStateDir {
 public:
  OldStateDir() {
    std::filesystem::create_directory(dir_ / "state");
    // Retention at its longest: the service must keep incidents of 2026 whenever this runs.
    std::ofstream(config())
        << R"({"state_dir": ")" << (dir_ / "state").string()
        << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)"
        << (dir_ / "api.sock").string() << R"("]}, "alerts": {"sink": "none"}, "targets": [],)"
        << R"( "retention": {"max_age_hours": 87600}})";
    sql("import pathlib; db.executescript(pathlib.Path('" WCTMON_STORE_DATA_DIR
        "/incidents-v2.sql').read_text())");
  }
  OldStateDir(const OldStateDir&) = delete;
  OldStateDir& operator=(const OldStateDir&) = delete;

  [[nodiscard]] std::string config() const { return (dir_ / "wctmon.json").string(); }
  [[nodiscard]] std::string store() const { return (dir_ / "state" / "incidents.db").string(); }

  /// Runs python3 `code` with `db`, a connection to the store; what it prints.
  std::string sql(const std::string& code) const {
    const auto r = runCommand({"python3", "-c",
                               "import sqlite3; db = sqlite3.connect('" + store() + "'); " + code +
                                   "; db.commit(); db.close()"});
    if (r.exit_code != 0) throw std::runtime_error("python3 failed: " + r.err);
    return r.out;
  }

  /// `wctmon run` until it has started (and so opened, and upgraded, its store), then stopped.
  void runService() const {
    const auto log = dir_ / "service.log";
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      const std::string c = config();
      ::execl(wctmonPath(), wctmonPath(), "run", "--config", c.c_str(), nullptr);
      _exit(127);
    }
    const bool started = testing::waitFor(
        [&] { return testing::readFile(log).find("service started") != std::string::npos; }, 20s);
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(started) << testing::readFile(log);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::readFile(log);
  }

 private:
  testing::TempDir dir_{"store-upgrade"};
};

TEST(StoreUpgrade, TheServiceUpgradesAStoreThePreviousVersionWroteAndEveryIncidentReadsTheSame) {
  OldStateDir dir;
  ASSERT_EQ(dir.sql("print(db.execute('SELECT version FROM schema_version').fetchone()[0])"),
            "2\n");
  // Read as it is (read-only: an older service may still be writing it).
  const auto before = runCommand({wctmonPath(), "incidents", "--config", dir.config(), "--json"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.err, "");
  auto old = json::parse(before.out)["incidents"];
  ASSERT_EQ(old.size(), 2U);

  dir.runService();
  ASSERT_EQ(dir.sql("print(db.execute('SELECT version FROM schema_version').fetchone()[0], "
                    "*[r[0] for r in db.execute('SELECT typeof(detail) FROM incidents')])"),
            "4 blob blob\n");
  const auto after = runCommand({wctmonPath(), "incidents", "--config", dir.config(), "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.err, "");
  auto now = json::parse(after.out)["incidents"];
  ASSERT_EQ(now.size(), 2U);
  // The deadlock between two processes was open: the service took it up and, its processes
  // long gone, resolved it (a write of an upgraded row).
  EXPECT_EQ(old[0]["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(now[0]["state"], "INCIDENT_STATE_RESOLVED");
  EXPECT_NE(now[0]["resolution"], "");
  for (const char* changed : {"state", "resolution", "resolved_at", "updated_at"}) {
    now[0].erase(changed);
    old[0].erase(changed);
  }
  // Everything else reads the same, to the last frame and register.
  for (std::size_t k = 0; k < now.size(); ++k) {
    EXPECT_TRUE(now[k] == old[k]) << "incident " << old[k]["id"] << " changed";
    EXPECT_EQ(now[k]["chains"].size(), 2U);
    EXPECT_EQ(now[k]["evidence"].size(), 2U);
    EXPECT_FALSE(now[k]["evidence"][0]["frames"].empty());
  }
  EXPECT_EQ(now[0]["processes"].size(), 2U);
}

TEST(StoreUpgrade, WctmonIncidentsNamesARowItCannotReadAndListsTheOthers) {
  OldStateDir dir;
  dir.runService();
  // Bytes that are no wctmon.v1.Incident.
  dir.sql("db.execute(\"UPDATE incidents SET detail = x'8201' WHERE id = 1\")");
  const auto listed = runCommand({wctmonPath(), "incidents", "--config", dir.config()});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.rfind("#2 deadlock ", 0), 0U) << listed.out;
  EXPECT_EQ(listed.out.find("#1 deadlock"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.err, "wctmon: warning: " + dir.store() +
                            ": 1 stored incident cannot be read and is left out (id 1): incident "
                            "1: its processes, chains and evidence do not parse as a "
                            "wctmon.v1.Incident\n");
  const auto as_json = runCommand({wctmonPath(), "incidents", "--config", dir.config(), "--json"});
  EXPECT_EQ(as_json.exit_code, 0);
  EXPECT_EQ(json::parse(as_json.out)["incidents"].size(), 1U);
  EXPECT_EQ(as_json.err, listed.err);
  const auto one = runCommand({wctmonPath(), "incidents", "--config", dir.config(), "--id", "1"});
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_EQ(one.err, "wctmon: " + dir.store() +
                         ": incident 1 cannot be read: its processes, chains and evidence do not "
                         "parse as a wctmon.v1.Incident\n");
}

}  // namespace
}  // namespace wctmon
