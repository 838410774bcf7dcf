// `wctmon incidents` as operators run it: a state directory without a store, a read-only one, the
// evidence of a real deadlock caught by the real service, one incident shown whole with --id.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::CommandResult;
using testing::FixtureProcess;
using testing::runCommand;
using testing::wctmonPath;

using testing::readFile;

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
  return testing::waitFor(done, timeout, 50ms);
}

/// A temporary directory with a config whose state_dir is `state/` in it (not created), and,
/// once start() is called, `wctmon run` on it watching the fixtures started through fixture().
class StateDir {
 public:
  StateDir() {
    tag_ = "--tag=" + dir_.name();
    std::ofstream(config())
        << R"({"state_dir": ")" << state().string()
        << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)"
        << (dir_ / "api.sock").string()
        << R"("]}, "sampling": {"interval_ms": 300}, "alerts": {"sink": "none"},)"
        << R"( "targets": [{"name": "fixtures", "cmdline": ")" << tag_
        << R"(", "out_of_proc": true, "hang_threshold_ms": 1000}]})";
  }
  ~StateDir() { stop(SIGKILL); }
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  [[nodiscard]] std::string config() const { return (dir_ / "wctmon.json").string(); }
  [[nodiscard]] std::filesystem::path state() const { return dir_ / "state"; }
  [[nodiscard]] std::filesystem::path store() const { return state() / "incidents.db"; }
  [[nodiscard]] const std::filesystem::path& path() const { return dir_.path(); }
  [[nodiscard]] std::string log() const { return readFile(dir_ / "service.log"); }

  [[nodiscard]] std::unique_ptr<FixtureProcess> fixture(const std::string& scenario) const {
    return std::make_unique<FixtureProcess>(scenario, "", tag_);
  }

  /// Starts the service and waits until it has made its store.
  void start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open((dir_ / "service.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      const std::string c = config();
      ::execl(wctmonPath(), wctmonPath(), "run", "--config", c.c_str(), nullptr);
      _exit(127);
    }
    if (!waitFor([&] { return log().find("service started") != std::string::npos; })) {
      throw std::runtime_error("the service did not start: " + log());
    }
  }
  /// Stops the service (SIGTERM: cleanly) and waits for it.
  void stop(int signal = SIGTERM) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  /// `wctmon incidents --config CONFIG args...`.
  [[nodiscard]] CommandResult incidents(const std::vector<std::string>& args = {}) const {
    std::vector<std::string> argv{wctmonPath(), "incidents", "--config", config()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }

  /// The names in the state directory.
  [[nodiscard]] std::set<std::string> stateFiles() const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(state())) {
      out.insert(e.path().filename().string());
    }
    return out;
  }

 private:
  testing::TempDir dir_{"incidents-cli"};
  std::string tag_;
  pid_t pid_ = -1;
};

/// The peak resident memory, in KiB, of the children this process has waited for.
long childrenPeakKib() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss;
}

// `wctmon incidents --json` peaked at 6.0 GB on a store of 51,000 incidents: it read them all,
// then built the whole text, before writing a byte.
TEST(Incidents, AListOfManyLargeIncidentsIsWrittenAsItIsReadNeverHeldWhole) {
#ifndef WCTMON_STORE_FILL_PATH
  GTEST_SKIP() << "built without the benchmark helpers (WCTMON_BUILD_BENCHMARKS)";
#else
  StateDir dir;
  std::filesystem::create_directories(dir.state());
  std::filesystem::permissions(dir.state(), std::filesystem::perms::owner_all);
  constexpr int kIncidents = 300;
  // Each of 40 chains of 25 named nodes: some 370 KB of JSON.
  const auto filled =
      runCommand({WCTMON_STORE_FILL_PATH, dir.store().string(), std::to_string(kIncidents)});
  ASSERT_EQ(filled.exit_code, 0) << filled.err;
  const long before = childrenPeakKib();
  const auto listed = dir.incidents({"--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const long peak = childrenPeakKib();
  const auto list = json::parse(listed.out)["incidents"];
  ASSERT_EQ(list.size(), static_cast<std::size_t>(kIncidents));
  for (std::size_t k = 0; k < list.size(); ++k) {
    EXPECT_EQ(list[k]["id"], std::to_string(kIncidents - k)) << "the most recent first";
  }
  // Some 140 MB of JSON from some 110 MB of incidents, written a page of incidents at a time.
  EXPECT_GT(listed.out.size(), 100'000'000U);
  EXPECT_LT(peak, 80 * 1024) << "KiB at the peak of `wctmon incidents --json`; before: " << before;

  // A limit across pages, and the text form, page by page too.
  const auto limited = dir.incidents({"--json", "--limit", "150"});
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  const auto some = json::parse(limited.out)["incidents"];
  ASSERT_EQ(some.size(), 150U);
  EXPECT_EQ(some.back()["id"], std::to_string(kIncidents - 149));
  const auto text = dir.incidents();
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::size_t headers = 0;
  for (std::size_t at = text.out.find("\n#"); at != std::string::npos;
       at = text.out.find("\n#", at + 1)) {
    ++headers;
  }
  EXPECT_EQ(headers + (text.out.starts_with("#") ? 1 : 0), static_cast<std::size_t>(kIncidents));
#endif
}

TEST(Incidents, WithoutAStoreItSaysSoWithThePathAndExitsOne) {
  StateDir dir;
  const std::string no_store = "wctmon: no incident store at " + dir.store().string() +
                               ": No such file or directory (the service creates it when it "
                               "first starts)\n";
  auto r = dir.incidents();  // no state directory at all
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, no_store);
  EXPECT_TRUE(r.out.empty()) << r.out;

  std::filesystem::create_directory(dir.state());  // a state directory without a store
  r = dir.incidents({"--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, no_store);
  EXPECT_TRUE(r.out.empty()) << r.out;

  std::filesystem::create_directory(dir.store());  // incidents.db is a directory
  r = dir.incidents();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "wctmon: " + dir.store().string() + " is a directory, not a wctmon incident store\n");

  std::filesystem::remove_all(dir.state());
  std::ofstream(dir.state()) << "not a directory";  // the state directory is a file
  r = dir.incidents();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "wctmon: no incident store at " + dir.store().string() + ": " +
                       dir.state().string() + " is a file, not a directory\n");
}

TEST(Incidents, TheServiceNamesAStateDirectoryThatIsAFile) {
  StateDir dir;
  std::ofstream(dir.state()) << "not a directory";
  const auto r = runCommand({wctmonPath(), "run", "--config", dir.config()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "wctmon: the state directory " + dir.state().string() +
                       " (state_dir): " + dir.state().string() + " is a file, not a directory\n");
}

TEST(Incidents, ReadingTheStoreLeavesNothingBehindAndWorksInAReadOnlyDirectory) {
  StateDir dir;
  dir.start();
  dir.stop();  // cleanly: the store is one file again
  const auto files = dir.stateFiles();
  ASSERT_EQ(files.count("incidents.db"), 1U);
  ASSERT_EQ(files.count("incidents.db-wal"), 0U);

  const auto r = dir.incidents();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no incidents\n");
  EXPECT_EQ(dir.stateFiles(), files);  // no -wal or -shm left behind
  EXPECT_EQ(dir.incidents({"--json"}).out, "{\n  \"incidents\": []\n}\n");
  EXPECT_EQ(dir.stateFiles(), files);

  // An unprivileged user, for whom the state directory is read-only (root ignores the bits), let
  // read the store as a member of its group.
  ASSERT_EQ(::chown(dir.store().c_str(), static_cast<uid_t>(-1), 65534), 0);
  std::filesystem::permissions(dir.store(), std::filesystem::perms(0640));
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  std::filesystem::permissions(dir.state(), std::filesystem::perms(0555));
  std::filesystem::permissions(dir.config(), std::filesystem::perms(0644));
  const testing::WorldExecutables binaries;
  const auto nobody = [&] {
    return runCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                       binaries.wctmon(), "incidents", "--config", dir.config()});
  };
  auto ro = nobody();
  EXPECT_EQ(ro.exit_code, 0) << ro.err;
  EXPECT_EQ(ro.out, "no incidents\n");
  EXPECT_EQ(dir.stateFiles(), files);

  // While the service runs, as root, writing its log beside the store.
  std::filesystem::permissions(dir.state(), std::filesystem::perms(0755));
  auto fx = dir.fixture("mutex-abba");
  dir.start();
  ASSERT_TRUE(waitFor([&] {
    return dir.incidents().out.find("deadlock open") != std::string::npos;
  })) << dir.log();
  std::filesystem::permissions(dir.state(), std::filesystem::perms(0555));
  ro = nobody();
  EXPECT_EQ(ro.exit_code, 0) << ro.err;
  EXPECT_NE(ro.out.find("deadlock open  pid " + std::to_string(fx->pid())), std::string::npos)
      << ro.out;
  std::filesystem::permissions(dir.state(), std::filesystem::perms(0755));
}

/// The one deadlock incident of `pid`, from `wctmon incidents --json`, once there is one.
json deadlockOf(const StateDir& dir, int pid) {
  json found;
  waitFor([&] {
    const auto r = dir.incidents({"--json"});
    if (r.exit_code != 0) return false;
    const auto list = json::parse(r.out);
    for (const auto& i : list["incidents"]) {
      for (const auto& p : i["processes"]) {
        if (p["pid"] == pid && i["kind"] == "INCIDENT_KIND_DEADLOCK") found = i;
      }
    }
    return !found.is_null() && !found["evidence"].empty();
  });
  return found;
}

/// The rip register of a capture, as the JSON gives it ("0x7f...").
std::string ripOf(const json& capture) {
  for (const auto& r : capture["registers"]) {
    if (r["name"] == "rip") return r["value"];
  }
  return "none";
}

std::string labelOf(const json& capture) {
  return "[" + std::to_string(capture["thread"]["pid"].get<int>()) + ":" +
         std::to_string(capture["thread"]["tid"].get<int>()) + "]";
}

TEST(Incidents, TheListShowsEachCycleThreadsInstructionPointerAndTopFrames) {
  StateDir dir;
  dir.start();
  auto fx = dir.fixture("mutex-abba");
  const auto incident = deadlockOf(dir, fx->pid());
  ASSERT_FALSE(incident.is_null()) << dir.log();
  ASSERT_EQ(incident["evidence"].size(), 2U);

  const auto r = dir.incidents();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("    evidence: 2 of 2 threads captured\n"), std::string::npos) << r.out;
  for (const auto& c : incident["evidence"]) {
    ASSERT_TRUE(c["captured"].get<bool>()) << c.dump();
    // "[pid:tid] stopped 40 us, ip 0x7f...": how it was taken, then where it stands.
    const auto at = r.out.find("      " + labelOf(c) + " stopped ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const auto line_end = r.out.find('\n', at);
    EXPECT_NE(r.out.substr(at, line_end - at).find(" us, ip " + ripOf(c)), std::string::npos)
        << r.out.substr(at, line_end - at);
    // Its three innermost frames, function+offset (module), the first in the lock's wait.
    std::istringstream lines(r.out.substr(line_end + 1));
    std::string line;
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(std::getline(lines, line));
      EXPECT_EQ(line.rfind("        #" + std::to_string(k) + " ", 0), 0U) << line;
      EXPECT_NE(line.find("+0x"), std::string::npos) << line;
    }
    EXPECT_NE(r.out.substr(line_end, 200).find("lock_wait"), std::string::npos) << r.out;
    const auto more = c["frames"].size() - 3;
    ASSERT_TRUE(more > 0 && std::getline(lines, line));
    EXPECT_EQ(line,
              "        ... " + std::to_string(more) + (more == 1 ? " more frame" : " more frames"));
  }
}

TEST(Incidents, AThreadReadWithoutStoppingIsShownAsSuch) {
  // Two processes each writing 1 MiB into a pipe the other never reads: a stop would cut a write
  // short, so their evidence is read without stopping them, and the list says so.
  StateDir dir;
  dir.start();
  auto fx = dir.fixture("pipe-deadlock");
  const auto incident = deadlockOf(dir, fx->pid());
  ASSERT_FALSE(incident.is_null()) << dir.log();
  const auto r = dir.incidents();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& c : incident["evidence"]) {
    ASSERT_EQ(c["method"], "CAPTURE_METHOD_NOT_STOPPED") << c.dump();
    EXPECT_NE(r.out.find(labelOf(c) + " read without stopping, ip " + ripOf(c)), std::string::npos)
        << r.out;
  }
}

TEST(Incidents, OneIncidentIsShownWholeWithItsId) {
  StateDir dir;
  dir.start();
  auto fx = dir.fixture("mutex-abba");
  const auto incident = deadlockOf(dir, fx->pid());
  ASSERT_FALSE(incident.is_null()) << dir.log();
  const std::string id = incident["id"];

  const auto r = dir.incidents({"--id", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("incident #" + id + ": deadlock, open\n", 0), 0U) << r.out;
  for (const char* field : {"\n  processes: ", "\n  threads: ", "\n  opened: ", "\n  updated: ",
                            "\n  resolved: not yet\n", "\n  summary: ", "\n  chains: 2\n"}) {
    EXPECT_NE(r.out.find(field), std::string::npos) << field << " missing:\n" << r.out;
  }
  EXPECT_NE(r.out.find("<== CYCLE"), std::string::npos);
  for (const auto& c : incident["evidence"]) {
    const auto at = r.out.find("    capture " + labelOf(c) + " (x86_64, stopped ");
    ASSERT_NE(at, std::string::npos) << r.out;
    // Every frame, not the first three.
    const auto& frames = c["frames"];
    for (std::size_t k = 0; k < frames.size(); ++k) {
      const std::string pc = frames[k]["pc"];
      EXPECT_NE(r.out.find("      #" + std::to_string(k) + " " + pc + " ", at), std::string::npos)
          << "frame " << k << " of " << labelOf(c);
    }
    // Every register.
    const auto registers = r.out.find("      registers:\n", at);
    ASSERT_NE(registers, std::string::npos) << r.out;
    for (const auto& reg : c["registers"]) {
      // "  rip         0x7f70332a412b": the name, then its value.
      const std::string name = reg["name"];
      const std::string value = reg["value"];
      const auto at_name = r.out.find(" " + name + " ", registers);
      ASSERT_NE(at_name, std::string::npos) << reg.dump();
      const auto at_value = r.out.find_first_not_of(' ', at_name + 1 + name.size());
      EXPECT_EQ(r.out.compare(at_value, value.size(), value), 0) << reg.dump();
    }
  }

  // --json: that Incident's proto3 JSON, as the list gives it.
  const auto j = dir.incidents({"--id", id, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto one = json::parse(j.out);
  EXPECT_EQ(one["id"], id);
  EXPECT_EQ(one["evidence"], incident["evidence"]);
  EXPECT_EQ(one["chains"], incident["chains"]);

  // An id the store does not have.
  const auto missing = dir.incidents({"--id", "987654"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "wctmon: no incident 987654 in " + dir.store().string() +
                             " (wctmon incidents lists them)\n");
  EXPECT_TRUE(missing.out.empty());
}

}  // namespace
}  // namespace wctmon
