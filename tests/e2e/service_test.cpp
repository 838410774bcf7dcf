// The monitoring service end to end: `wctmon run` on a temporary config and state directory,
// real fixtures that deadlock or hang, incidents read back with `wctmon incidents --json`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FixtureProcess;
using testing::runCommand;
using testing::wctmonPath;
using Clock = std::chrono::system_clock;

constexpr int kIntervalMs = 300;

/// A temporary state directory and config for one service.
class ServiceDir {
 public:
  ServiceDir() {
    tag_ = "--tag=" + dir_.name();
    writeConfig(R"([{"name": "fixtures", "cmdline": ")" + tag_ +
                R"(", "hang_threshold_ms": 1000}])");
  }

  /// Starts a fixture this service, and only this one, watches.
  [[nodiscard]] std::unique_ptr<FixtureProcess> fixture(const std::string& scenario,
                                                        const std::string& arg = "") const {
    return std::make_unique<FixtureProcess>(scenario, arg, tag_);
  }
  [[nodiscard]] const std::string& tag() const { return tag_; }

  void writeConfig(const std::string& targets, const std::string& extra = "") const {
    std::ofstream(config())
        << R"({"state_dir": ")" << (dir_ / "state").string()
        << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)"
        << (dir_ / "api.sock").string() << R"("]}, "sampling": {"interval_ms": )" << kIntervalMs
        << R"(}, "alerts": {"sink": "none"}, "log": {"level": "debug"},)" << extra
        << R"( "targets": )" << targets << "}";
    // `wctmon incidents` reads its own copy, so that it works while the service's is broken.
    std::ofstream(queryConfig()) << R"({"state_dir": ")" << (dir_ / "state").string() << R"("})";
  }
  [[nodiscard]] std::string queryConfig() const { return (dir_ / "query.json").string(); }
  void writeRaw(const std::string& text) const { std::ofstream(config()) << text; }
  [[nodiscard]] std::string config() const { return (dir_ / "wctmon.json").string(); }
  [[nodiscard]] std::filesystem::path log() const { return dir_ / "service.log"; }

 private:
  testing::TempDir dir_{"service"};
  std::string tag_;
};

/// `wctmon run` in the background, its stderr in a file.
class Service {
 public:
  /// `nofile`: the soft and hard RLIMIT_NOFILE to start it with, as `prlimit --nofile=N` does.
  explicit Service(const ServiceDir& dir,
                   const std::vector<std::pair<std::string, std::string>>& env = {},
                   std::optional<rlim_t> nofile = std::nullopt)
      : dir_(dir) {
    pid_ = ::fork();
    if (pid_ == 0) {
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      if (nofile) {
        const rlimit limit{*nofile, *nofile};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      const int fd = ::open(dir.log().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      const std::string config = dir.config();
      ::execl(wctmonPath(), wctmonPath(), "run", "--config", config.c_str(), nullptr);
      _exit(127);
    }
  }
  ~Service() {
    if (pid_ > 0) kill(SIGKILL);
  }
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Sends `signal`; for SIGTERM/SIGKILL, waits and returns the exit status.
  int kill(int signal) {
    ::kill(pid_, signal);
    if (signal == SIGHUP) return 0;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  [[nodiscard]] bool alive() const {
    int status = 0;
    return pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == 0;
  }
  /// `wctmon run` execs the service: the same pid.
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  const ServiceDir& dir_;
  pid_t pid_ = -1;
};

/// Every stored incident. A service creates its store as it starts, whole (never half made):
/// this waits for it to appear, and from then on any failure of `wctmon incidents` is an error.
nlohmann::json incidents(const ServiceDir& dir) {
  const auto store =
      std::filesystem::path(dir.queryConfig()).parent_path() / "state" / "incidents.db";
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (!std::filesystem::exists(store) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  const auto r = runCommand({wctmonPath(), "incidents", "--config", dir.queryConfig(), "--json"});
  if (r.exit_code != 0) throw std::runtime_error("wctmon incidents failed: " + r.err);
  return nlohmann::json::parse(r.out)["incidents"];
}

/// Incidents of `pid` of `kind` (and `state` when given).
std::vector<nlohmann::json> incidentsOf(const ServiceDir& dir, int pid, const std::string& kind,
                                        const std::string& state = "") {
  std::vector<nlohmann::json> out;
  for (const auto& i : incidents(dir)) {
    if (i["pid"] == pid && i["kind"] == kind && (state.empty() || i["state"] == state))
      out.push_back(i);
  }
  return out;
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 15s) {
  return testing::waitFor(done, timeout, 50ms);
}

Clock::time_point parseTime(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream in(rfc3339);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  auto t = Clock::from_time_t(::timegm(&tm));
  const auto dot = rfc3339.find('.');
  if (dot != std::string::npos) {
    const auto digits = rfc3339.substr(dot + 1, rfc3339.size() - dot - 2);
    t += std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(
        std::stoll(digits) * static_cast<long long>(std::pow(10, 9 - digits.size()))));
  }
  return t;
}

using testing::readFile;

TEST(Service, CatchesADeadlockWithinTwoIntervalsAndResolvesItWhenTheProcessDies) {
  ServiceDir dir;
  Service service(dir);
  ASSERT_TRUE(waitFor([&] {
    return std::filesystem::exists(dir.log()) &&
           readFile(dir.log()).find("service started") != std::string::npos;
  })) << readFile(dir.log());
  auto fx = dir.fixture("mutex-abba");
  const auto formed = Clock::now();
  const int pid = fx->pid();
  ASSERT_TRUE(waitFor([&] { return !incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK").empty(); }))
      << readFile(dir.log());
  auto found = incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK");
  ASSERT_EQ(found.size(), 1U);
  const auto& i = found[0];
  EXPECT_EQ(i["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(i["process_name"], "wctmon-fixture");
  ASSERT_EQ(i["threads"].size(), 2U);
  EXPECT_EQ(i["threads"][0]["tid"], fx->tid("a"));
  EXPECT_EQ(i["threads"][1]["tid"], fx->tid("b"));
  EXPECT_EQ(i["evidence"].size(), 2U);
  EXPECT_TRUE(i["evidence"][0]["captured"].get<bool>()) << i["evidence"][0].dump();
  const auto opened = parseTime(i["opened_at"]);
  EXPECT_LE(opened - formed, std::chrono::milliseconds(2 * kIntervalMs + 500));

  fx.reset();  // killed
  ASSERT_TRUE(waitFor([&] {
    return !incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK", "INCIDENT_STATE_RESOLVED").empty();
  }));
  const auto resolved = incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK")[0];
  EXPECT_EQ(resolved["resolution"], "the process exited");
  EXPECT_EQ(resolved["id"], i["id"]);
  EXPECT_TRUE(service.alive());
  EXPECT_EQ(service.kill(SIGTERM), 0);
}

TEST(Service, AThreadStuckPastTheThresholdIsAHang) {
  ServiceDir dir;
  Service service(dir);
  auto fx = dir.fixture("long-chain", "2");  // t0 waits for t1's mutex; t1 pauses for good
  const int pid = fx->pid();
  ASSERT_TRUE(waitFor([&] { return !incidentsOf(dir, pid, "INCIDENT_KIND_HANG").empty(); }))
      << readFile(dir.log());
  const auto hangs = incidentsOf(dir, pid, "INCIDENT_KIND_HANG");
  ASSERT_EQ(hangs.size(), 1U);
  ASSERT_EQ(hangs[0]["threads"].size(), 1U);
  EXPECT_EQ(hangs[0]["threads"][0]["tid"], fx->tid("t0"));
  EXPECT_TRUE(incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK").empty());
  const auto& first = hangs[0]["chains"][0]["nodes"][0];
  EXPECT_GE(std::stoull(first["wait_time_ms"].get<std::string>()), 1000U);
}

TEST(Service, ABackOffCycleOfTimedLocksNeverOpensAnIncidentBesideARealDeadlock) {
  // Threads c and d take their second lock with try_lock_for(300 ms), less than the target's
  // hang threshold (1 s), and give way: their loop must never open, resolve and reopen.
  ServiceDir dir;
  Service service(dir);
  auto fx = dir.fixture("timed-backoff");
  const int pid = fx->pid();
  ASSERT_TRUE(waitFor([&] { return !incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK").empty(); }))
      << readFile(dir.log());
  std::this_thread::sleep_for(std::chrono::milliseconds(10 * kIntervalMs));
  const auto found = incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK");
  ASSERT_EQ(found.size(), 1U) << nlohmann::json(found).dump(1);
  EXPECT_EQ(found[0]["state"], "INCIDENT_STATE_OPEN");
  ASSERT_EQ(found[0]["threads"].size(), 2U);
  EXPECT_EQ(found[0]["threads"][0]["tid"], fx->tid("a"));
  EXPECT_EQ(found[0]["threads"][1]["tid"], fx->tid("b"));
}

TEST(Service, IncidentsSurviveARestartAndAKillNineWithoutDuplicates) {
  ServiceDir dir;
  auto fx = dir.fixture("mutex-abba");
  const int pid = fx->pid();
  {
    Service service(dir);
    ASSERT_TRUE(waitFor([&] { return !incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK").empty(); }));
    EXPECT_EQ(service.kill(SIGTERM), 0);
  }
  EXPECT_EQ(incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK", "INCIDENT_STATE_OPEN").size(), 1U);
  {
    Service service(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(4 * kIntervalMs));
    EXPECT_EQ(incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK").size(),
              1U);  // continued, not doubled
    service.kill(SIGKILL);
  }
  EXPECT_EQ(incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK", "INCIDENT_STATE_OPEN").size(), 1U);
  Service service(dir);
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kIntervalMs));
  EXPECT_EQ(incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK").size(), 1U);
  fx->kill();
  ASSERT_TRUE(waitFor([&] {
    return !incidentsOf(dir, pid, "INCIDENT_KIND_DEADLOCK", "INCIDENT_STATE_RESOLVED").empty();
  }));
}

TEST(Service, AnInvalidConfigAtStartIsAClearErrorAndAnInvalidReloadKeepsTheRunningOne) {
  ServiceDir dir;
  dir.writeRaw(R"({"sampling": {"interval_ms": "fast"}})");
  const auto r = runCommand({wctmonPath(), "run", "--config", dir.config()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/sampling/interval_ms: must be an integer, not a string"),
            std::string::npos)
      << r.err;
  const auto v = runCommand({wctmonPath(), "validate-config", dir.config()});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.err.find("/sampling/interval_ms"), std::string::npos);

  dir.writeConfig(R"([{"name": "fixtures", "cmdline": ")" + dir.tag() + R"("}])");
  Service service(dir);
  ASSERT_TRUE(
      waitFor([&] { return readFile(dir.log()).find("service started") != std::string::npos; }));
  dir.writeRaw("{ not json");
  service.kill(SIGHUP);
  ASSERT_TRUE(waitFor([&] {
    return readFile(dir.log()).find("reload refused") != std::string::npos;
  })) << readFile(dir.log());
  // Still running on the old config: it still watches the fixtures.
  auto fx = dir.fixture("mutex-abba");
  ASSERT_TRUE(
      waitFor([&] { return !incidentsOf(dir, fx->pid(), "INCIDENT_KIND_DEADLOCK").empty(); }));
  EXPECT_TRUE(service.alive());

  // A valid reload applies: the fixtures are no longer a target.
  dir.writeConfig(R"([{"name": "nothing", "exe": "no-such-program"}])");
  service.kill(SIGHUP);
  ASSERT_TRUE(waitFor(
      [&] { return readFile(dir.log()).find("configuration reloaded") != std::string::npos; }));
  ASSERT_TRUE(waitFor([&] {
    return !incidentsOf(dir, fx->pid(), "INCIDENT_KIND_DEADLOCK", "INCIDENT_STATE_RESOLVED")
                .empty();
  }));
  EXPECT_EQ(incidentsOf(dir, fx->pid(), "INCIDENT_KIND_DEADLOCK")[0]["resolution"],
            "the process is no longer watched");
}

TEST(Service, OneServicePerStateDirectoryTheSecondIsRefusedNamingTheFirst) {
  ServiceDir dir;
  Service first(dir);
  ASSERT_TRUE(waitFor([&] {
    return readFile(dir.log()).find("service started") != std::string::npos;
  })) << readFile(dir.log());
  // Another configuration (its own API socket) on the same state directory.
  ServiceDir other;
  const auto state = std::filesystem::path(dir.config()).parent_path() / "state";
  other.writeRaw(R"({"state_dir": ")" + state.string() +
                 R"(", "metrics": {"enabled": false}, "api": {"enabled": false}, "targets": []})");
  const auto second = runCommand({wctmonPath(), "run", "--config", other.config()});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("the state directory " + state.string() +
                            " is in use by another wctmon service (pid " +
                            std::to_string(first.pid()) + "; lock "),
            std::string::npos)
      << second.err;
  EXPECT_TRUE(first.alive());

  // Once the first is gone, even by SIGKILL, the directory is free again.
  first.kill(SIGKILL);
  Service third(other);
  EXPECT_TRUE(waitFor([&] {
    return readFile(other.log()).find("service started") != std::string::npos;
  })) << readFile(other.log());
}

/// Waits until `pid` runs wctmond (`wctmon run` execs it), polling every 100 µs.
bool waitForExec(pid_t pid) {
  const auto exe = "/proc/" + std::to_string(pid) + "/exe";
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (std::filesystem::read_symlink(exe, ec).filename() == "wctmond") return true;
    std::this_thread::sleep_for(100us);
  }
  return false;
}

TEST(Service, AStateDirectoryItCannotWriteIsOneClearErrorAtStart) {
  // Root writes anywhere: the service runs as nobody, on a directory it may read but not write.
  testing::TempDir dir("readonly");
  namespace fs = std::filesystem;
  fs::create_directories(dir / "state");
  std::ofstream(dir / "wctmon.json")
      << R"({"state_dir": ")" << (dir / "state").string()
      << R"(", "alerts": {"sink": "none"}, "api": {"enabled": false},)"
      << R"( "metrics": {"enabled": false}, "targets": []})";
  fs::permissions(dir.path(), fs::perms(0755));
  fs::permissions(dir / "wctmon.json", fs::perms(0644));
  fs::permissions(dir / "state", fs::perms(0555));
  const auto r = runCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             wctmonPath(), "run", "--config", (dir / "wctmon.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "wctmon: the state directory " + (dir / "state").string() +
                       " is not writable by the service: cannot create " +
                       (dir / "state" / "wctmon.lock").string() + ": Permission denied\n");
}

TEST(Service, ASignalInItsFirstMillisecondsIsHandledNotItsDeath) {
  // `wctmon run` holds the stop and reload signals from before it execs the service until the
  // service's loop handles them: a SIGHUP while the service loads its libraries and starts is a
  // reload once it runs, a SIGTERM a clean stop (not the default actions' 129 and 143). Each is
  // sent at the service's first instant, as soon as the process is wctmond. (Before wctmon's own
  // main runs, a process can do nothing about a signal.)
  for (int round = 0; round < 2; ++round) {
    ServiceDir dir;
    Service service(dir);
    ASSERT_TRUE(waitForExec(service.pid()));
    service.kill(SIGHUP);
    ASSERT_TRUE(waitFor([&] {
      return readFile(dir.log()).find("configuration reloaded") != std::string::npos;
    })) << readFile(dir.log());
    const int status = service.kill(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  for (int round = 0; round < 2; ++round) {
    ServiceDir dir;
    Service service(dir);
    ASSERT_TRUE(waitForExec(service.pid()));
    const int status = service.kill(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << readFile(dir.log());
  }
}

TEST(Service, AFloodOfReloadSignalsIsOneReload) {
  ServiceDir dir;
  Service service(dir);
  ASSERT_TRUE(
      waitFor([&] { return readFile(dir.log()).find("service started") != std::string::npos; }));
  for (int i = 0; i < 100; ++i) {  // 100 in about a second
    service.kill(SIGHUP);
    std::this_thread::sleep_for(9ms);
  }
  ASSERT_TRUE(waitFor([&] {
    return readFile(dir.log()).find("configuration reloaded") != std::string::npos;
  })) << readFile(dir.log());
  std::this_thread::sleep_for(3s);  // anything a second reload would take
  const auto log = readFile(dir.log());
  std::size_t reloads = 0;
  for (auto at = log.find("configuration reloaded"); at != std::string::npos;
       at = log.find("configuration reloaded", at + 1)) {
    ++reloads;
  }
  EXPECT_EQ(reloads, 1U) << log;
  EXPECT_TRUE(service.alive());
}

TEST(Service, TargetsThatExitOrStopMidSampleNeverHangOrCrashIt) {
  ServiceDir dir;
  // A deadlocked process that is stopped (SIGSTOP): while stopped it waits for SIGCONT, not for
  // its locks, so it is no deadlock (a stopped thread is never stuck); once continued it is one,
  // and its capture must neither hang on it nor leave it traced or stopped. Stopped before the
  // service starts: a sample between its deadlock and the stop would rightly see a deadlock.
  auto stopped_fixture = dir.fixture("mutex-abba");
  auto& stopped = *stopped_fixture;
  ::kill(stopped.pid(), SIGSTOP);
  Service service(dir);
  // Processes that keep exiting under the sampler.
  for (int i = 0; i < 10; ++i) (void)dir.fixture("churn", "50");
  auto other_fixture = dir.fixture("self-deadlock");
  auto& other = *other_fixture;
  ASSERT_TRUE(waitFor([&] {
    return !incidentsOf(dir, other.pid(), "INCIDENT_KIND_DEADLOCK").empty();
  })) << readFile(dir.log());
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kIntervalMs));
  EXPECT_TRUE(incidentsOf(dir, stopped.pid(), "INCIDENT_KIND_DEADLOCK").empty());
  ::kill(stopped.pid(), SIGCONT);
  ASSERT_TRUE(waitFor([&] {
    return !incidentsOf(dir, stopped.pid(), "INCIDENT_KIND_DEADLOCK").empty();
  })) << readFile(dir.log());
  std::this_thread::sleep_for(100ms);
  std::ifstream status("/proc/" + std::to_string(stopped.pid()) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("TracerPid:", 0) == 0) {
      EXPECT_EQ(line, "TracerPid:\t0");
    }
    if (line.rfind("State:", 0) == 0) {
      EXPECT_EQ(line.find("stopped"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(service.alive());
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(service.kill(SIGTERM), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

/// A socket standing in for systemd's notification socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  ~NotifySocket() { ::close(fd_); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  /// The next datagram, or "" after `timeout`.
  std::string next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return {};
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

TEST(Service, TellsSystemdItIsReadyFeedsTheWatchdogAndSaysWhenItStops) {
  ServiceDir dir;
  const auto path = std::filesystem::path(dir.config()).parent_path() / "notify.sock";
  NotifySocket notify(path);
  Service service(dir, {{"NOTIFY_SOCKET", path.string()}, {"WATCHDOG_USEC", "600000"}});
  std::vector<std::string> seen;
  int watchdogs = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (watchdogs < 3 && std::chrono::steady_clock::now() < deadline) {
    const auto message = notify.next(1s);
    if (message.empty()) continue;
    seen.push_back(message);
    if (message == "WATCHDOG=1") ++watchdogs;
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().rfind("READY=1", 0), 0U) << seen.front();
  EXPECT_EQ(watchdogs, 3);
  bool status = false;
  for (const auto& m : seen) status = status || m.rfind("STATUS=watching", 0) == 0;
  EXPECT_TRUE(status);
  // Read while it stops, as systemd does: a socket nobody reads fills up and holds the sender.
  auto stopped = std::async(std::launch::async, [&] { return service.kill(SIGTERM); });
  bool stopping = false;
  for (std::string m = notify.next(2s); !m.empty(); m = notify.next(500ms)) {
    stopping = stopping || m == "STOPPING=1";
  }
  EXPECT_TRUE(stopping);
  stopped.get();
}

TEST(Service, AReloadAppliesWhatCanChangeLiveAndNamesWhatNeedsARestart) {
  ServiceDir dir;
  const auto base = std::filesystem::path(dir.config()).parent_path();
  const auto notify_path = base / "notify.sock";
  NotifySocket notify(notify_path);
  Service service(dir, {{"NOTIFY_SOCKET", notify_path.string()}});
  ASSERT_TRUE(waitFor([&] {
    return readFile(dir.log()).find("service started") != std::string::npos;
  })) << readFile(dir.log());

  // Live: the log level and file, a threshold. Restart only: the workers, the state directory.
  const auto elsewhere = base / "elsewhere";
  // The API where it was: a change of api.listen would need a restart too.
  const auto socket = std::filesystem::path(dir.config()).parent_path() / "api.sock";
  std::ofstream(dir.config())
      << R"({"state_dir": ")" << elsewhere.string()
      << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)" << socket.string()
      << R"("]}, "sampling": {"interval_ms": )" << kIntervalMs
      << R"(, "threads": 3}, "detection": {"hang_threshold_ms": 2000},)"
      << R"( "alerts": {"sink": "none"},)"
      << R"( "log": {"level": "info", "file": "reloaded.log"},)"
      << R"( "targets": [{"name": "fixtures", "cmdline": ")" << dir.tag()
      << R"(", "hang_threshold_ms": 1000}]})";
  service.kill(SIGHUP);
  ASSERT_TRUE(waitFor([&] {
    return readFile(dir.log()).find("configuration reloaded") != std::string::npos;
  })) << readFile(dir.log());
  const auto log = readFile(dir.log());
  const auto at = log.find("configuration reloaded");
  const auto line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("applied detection.hang_threshold_ms, log.level, log.file; "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("needs a restart: state_dir, sampling.threads"), std::string::npos) << line;
  EXPECT_NE(log.find("warning sampling.threads changed to 3 in " + dir.config() +
                     ", which needs a restart (the worker pool is sized at start): still "
                     "running with 0"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("warning state_dir changed to " + elsewhere.string()), std::string::npos)
      << log;

  // The running state directory is kept: the new log file opens there, nothing is made at the
  // new place, and the supervisor's status says what waits for a restart.
  const auto state = base / "state";
  EXPECT_FALSE(std::filesystem::exists(elsewhere));
  ASSERT_TRUE(waitFor([&] {
    return readFile(state / "reloaded.log").find("configuration reloaded") != std::string::npos;
  })) << readFile(state / "reloaded.log");
  bool said = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!said && std::chrono::steady_clock::now() < deadline) {
    said =
        notify.next(1s).find("restart needed for state_dir, sampling.threads") != std::string::npos;
  }
  EXPECT_TRUE(said);

  // And it keeps working: a deadlock formed after the reload is caught, in the running store.
  auto fx = dir.fixture("mutex-abba");
  ASSERT_TRUE(waitFor([&] {
    return !incidentsOf(dir, fx->pid(), "INCIDENT_KIND_DEADLOCK").empty();
  })) << readFile(dir.log());
  EXPECT_FALSE(std::filesystem::exists(elsewhere));
  EXPECT_TRUE(service.alive());
  EXPECT_EQ(service.kill(SIGTERM), 0);
  EXPECT_NE(readFile(state / "reloaded.log").find("wctmon service stopped"), std::string::npos);
}

/// The service's open descriptors.
std::size_t descriptorsOf(pid_t pid) {
  std::error_code ec;
  const std::filesystem::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec);
  return ec ? 0 : static_cast<std::size_t>(std::distance(fds, {}));
}

TEST(Service, AProcessWithFarMoreThreadsThanItsDescriptorLimitIsWatchedWithinTheLimit) {
  // 3,000 idle threads and a deadlock, watched by a service started with RLIMIT_NOFILE 256 (as
  // `prlimit --nofile=256` does): one kept-open descriptor per thread would need twelve times
  // that. The deadlock is caught, and the service never holds more than its limit allows nor
  // fails an open for lack of descriptors.
  ServiceDir dir;
  auto fx = dir.fixture("idle-abba", "3000");
  Service service(dir, {}, 256);

  std::size_t most = 0;
  ASSERT_TRUE(waitFor(
      [&] {
        most = std::max(most, descriptorsOf(service.pid()));
        return !incidentsOf(dir, fx->pid(), "INCIDENT_KIND_DEADLOCK").empty();
      },
      60s))
      << readFile(dir.log());
  // Ten more samples of all 3,000 threads.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(10 * kIntervalMs);
  while (std::chrono::steady_clock::now() < until) {
    most = std::max(most, descriptorsOf(service.pid()));
    std::this_thread::sleep_for(20ms);
  }
  RecordProperty("most_descriptors", static_cast<int>(most));
  EXPECT_GT(most, 0U);
  EXPECT_LE(most, 256U);
  const auto log = readFile(dir.log());
  EXPECT_EQ(log.find("Too many open files"), std::string::npos) << log;
  EXPECT_TRUE(service.alive());
  EXPECT_EQ(service.kill(SIGTERM), 0);
}

/// The tracer of each thread of `pid` that has one.
std::vector<int> tracersOf(pid_t pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("TracerPid:", 0) == 0 && std::stoi(line.substr(10)) != 0) {
        out.push_back(std::stoi(line.substr(10)));
      }
    }
  }
  return out;
}

TEST(Service, AServiceKilledWhileItHoldsThreadsForCaptureNeverLeavesOneStopped) {
  // 100 rounds: a fresh service (its own state directory) finds the same deadlock and captures
  // its threads, stopping each with ptrace for a moment. The test watches the threads' tracer
  // and SIGKILLs the service the moment it is one of them (or at a random moment when that is
  // missed). The kernel detaches a dead tracer's tracees; none may stay stopped.
  const FixtureProcess fx("mutex-abba");
  const std::string target = R"([{"name": "fx", "pid": )" + std::to_string(fx.pid()) + "}]";
  const auto seed = std::random_device{}();
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> late(0, 4 * kIntervalMs);
  int mid_capture = 0;
  for (int round = 0; round < 100; ++round) {
    ServiceDir dir;
    dir.writeConfig(target);
    Service service(dir);
    // Half the rounds watch for the capture; the others kill at a random moment of the first
    // samples.
    const bool watch = round % 2 == 0;
    const auto give_up = std::chrono::steady_clock::now() +
                         (watch ? 3000ms : std::chrono::milliseconds(late(random)));
    const auto service_task = "/proc/" + std::to_string(service.pid()) + "/task/";
    bool caught = false;
    while (!caught && std::chrono::steady_clock::now() < give_up) {
      if (!watch) continue;
      // A tracer is a thread (the service's worker that captures), named by its tid.
      for (const int tracer : tracersOf(fx.pid())) {
        caught = caught || std::filesystem::exists(service_task + std::to_string(tracer));
      }
    }
    service.kill(SIGKILL);
    mid_capture += caught ? 1 : 0;
    for (const auto& [tid, state] : testing::threadStates(fx.pid())) {
      ASSERT_TRUE(state != 't' && state != 'T')
          << "thread " << tid << " left in state " << state << " in round " << round
          << (caught ? " (killed mid-capture)" : "") << ", seed " << seed;
    }
    ASSERT_TRUE(tracersOf(fx.pid()).empty()) << "round " << round;
  }
  RecordProperty("killed_mid_capture", mid_capture);
  // The watch must really have seen captures, or the rounds above prove little.
  EXPECT_GT(mid_capture, 0);
  // And the deadlock is what it was: a last service finds it and captures both threads.
  ServiceDir dir;
  dir.writeConfig(target);
  Service service(dir);
  ASSERT_TRUE(waitFor([&] {
    const auto found = incidentsOf(dir, fx.pid(), "INCIDENT_KIND_DEADLOCK");
    return found.size() == 1 && found[0]["evidence"].size() == 2U &&
           found[0]["evidence"][0]["captured"].get<bool>();
  })) << readFile(dir.log());
}

}  // namespace
}  // namespace wctmon
