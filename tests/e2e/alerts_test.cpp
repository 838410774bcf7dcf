// Where the service's alerts go, end to end: `wctmon run` against a real systemd-journald (read
// back with journalctl), against a syslog socket when journald is absent, and with neither. Each
// test runs in its own mount namespace, where /run/systemd, /run/log and /dev are private: it
// starts its own journald or binds its own /dev/log and never touches the host's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FixtureProcess;
using testing::runCommand;
using testing::wctmonPath;

constexpr const char* kJournald = "/lib/systemd/systemd-journald";
constexpr const char* kJournalSocket = "/run/systemd/journal/socket";
constexpr const char* kDeadlockId = "c2519431cd9d4f02bf613503ae34abfb";
constexpr const char* kHangId = "3eea867526074cbfbfd8e8fc2f6a9b6a";
constexpr const char* kResolvedId = "28aaba1380694f57b6dc269a05976cf6";
constexpr const char* kStartedId = "5ce0be8b13114c75b1abfb9ee90a4e16";
constexpr const char* kStoppedId = "db880371f45e4e49a46c38ea5049e2db";
constexpr const char* kConfigErrorId = "82613676a43f4554a6d0a2ef4b02c60b";
constexpr const char* kStoreFaultId = "b3e1c7d24a6f4e0c9d58f2a71c4e6b90";
constexpr const char* kStoreRecoveredId = "4d92a6e0f1b34c7a8e25d0c6b9f3a715";

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

using testing::readFile;

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
  return testing::waitFor(done, timeout, 100ms);
}

/// This test process (and all it starts) in a private mount namespace, left again at the end:
/// what it mounts is never seen by the host, and the host's system logs are hidden from it.
class PrivateMounts {
 public:
  PrivateMounts() {
    original_ = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    check(original_ >= 0, "open /proc/self/ns/mnt");
    check(::unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS)");
    // Without this, mounts below would propagate to the host's shared mounts.
    check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "make / private");
    // No journald: its sockets live under /run/systemd; journalctl reads /run/log/journal and
    // /var/log/journal, which must not be the host's either.
    for (const char* dir : {"/run/systemd", "/run/log", "/var/log/journal"}) {
      if (std::filesystem::is_directory(dir)) tmpfs(dir);
    }
  }
  ~PrivateMounts() {
    ::setns(original_, CLONE_NEWNS);
    ::close(original_);
    // Back in the host's namespace these are empty directories (never remove_all: inside the
    // private namespace the second one is the real /dev).
    if (!dev_copy_.empty()) {
      std::error_code ec;
      std::filesystem::remove(dev_copy_ / "dev", ec);
      std::filesystem::remove(dev_copy_, ec);
    }
  }
  PrivateMounts(const PrivateMounts&) = delete;
  PrivateMounts& operator=(const PrivateMounts&) = delete;

  static void tmpfs(const char* dir) {
    check(::mount("tmpfs", dir, "tmpfs", 0, "mode=755") == 0, std::string("mount tmpfs on ") + dir);
  }

  /// The journal's catalog of this namespace: `catalog` alone in /usr/lib/systemd/catalog, and
  /// the database journalctl -x reads built from it.
  static void privateCatalog(const std::filesystem::path& catalog) {
    for (const char* dir : {"/usr/lib/systemd/catalog", "/var/lib/systemd/catalog"}) {
      check(std::filesystem::is_directory(dir), std::string(dir) + " (systemd)");
      tmpfs(dir);
    }
    std::filesystem::copy_file(catalog, "/usr/lib/systemd/catalog/wctmon.catalog");
    const auto updated = runCommand({"journalctl", "--update-catalog"});
    if (updated.exit_code != 0) {
      throw std::runtime_error("journalctl --update-catalog: " + updated.err);
    }
  }

  /// A /dev of our own without `log` (whatever the host has there), so that a test decides
  /// whether a syslog socket exists: every other entry links to the real one.
  void privateDev() {
    char dir[] = "/tmp/wctmon-alerts-XXXXXX";
    check(::mkdtemp(dir) != nullptr, "mkdtemp");
    dev_copy_ = dir;
    const auto real = dev_copy_ / "dev";
    std::filesystem::create_directory(real);
    check(::mount("/dev", real.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0, "bind /dev");
    tmpfs("/dev");
    for (const auto& entry : std::filesystem::directory_iterator(real)) {
      const auto name = entry.path().filename();
      if (name == "log") continue;
      std::filesystem::create_symlink(entry.path(), std::filesystem::path("/dev") / name);
    }
  }

 private:
  int original_ = -1;
  std::filesystem::path dev_copy_;
};

/// A real systemd-journald, volatile storage only, inside the private namespace.
class Journald {
 public:
  Journald() {
    if (::access(kJournald, X_OK) != 0 || ::access("/usr/bin/journalctl", X_OK) != 0)
      throw std::runtime_error("systemd-journald/journalctl missing: scripts/bootstrap.sh");
    std::filesystem::create_directories("/run/systemd/journald.conf.d");
    std::ofstream("/run/systemd/journald.conf.d/test.conf")
        << "[Journal]\nStorage=volatile\nReadKMsg=no\nRateLimitIntervalSec=0\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::execl(kJournald, kJournald, nullptr);
      _exit(127);
    }
    if (!waitFor([] { return std::filesystem::exists(kJournalSocket); }, 10s))
      throw std::runtime_error("systemd-journald did not create its socket");
  }
  ~Journald() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  Journald(const Journald&) = delete;
  Journald& operator=(const Journald&) = delete;

  /// Every entry with `message_id`, as journalctl's JSON.
  static std::vector<nlohmann::json> entries(const std::string& message_id) {
    const auto r =
        runCommand({"journalctl", "--no-pager", "-o", "json", "MESSAGE_ID=" + message_id});
    std::vector<nlohmann::json> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.front() == '{') out.push_back(nlohmann::json::parse(line));
    }
    return out;
  }

 private:
  pid_t pid_ = -1;
};

/// A syslog daemon's socket at /dev/log: what syslog(3) sends, datagram by datagram.
class SyslogSocket {
 public:
  SyslogSocket() {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    check(fd_ >= 0, "socket");
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, "/dev/log");
    check(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0,
          "bind /dev/log");
  }
  ~SyslogSocket() {
    ::close(fd_);
    ::unlink("/dev/log");
  }
  SyslogSocket(const SyslogSocket&) = delete;
  SyslogSocket& operator=(const SyslogSocket&) = delete;

  /// The first line received (or received before) that contains every one of `parts`.
  std::string lineWith(const std::vector<std::string>& parts, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      for (const auto& line : lines_) {
        bool all = true;
        for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
        if (all) return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) == 1) {
        char buffer[8192];
        const auto n = ::recv(fd_, buffer, sizeof(buffer), 0);
        if (n > 0) lines_.emplace_back(buffer, static_cast<std::size_t>(n));
      }
    }
  }
  [[nodiscard]] const std::vector<std::string>& lines() const { return lines_; }

  /// Fills the socket's queue as a daemon that stopped reading leaves it: the next line sent
  /// blocks (syslog(3) sends and waits) until lineWith() reads again.
  void fill() {
    const int client = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    check(client >= 0, "socket");
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, "/dev/log");
    check(::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0,
          "connect /dev/log");
    const std::string filler = "<13>filler";
    while (::send(client, filler.data(), filler.size(), MSG_DONTWAIT) > 0) {
    }
    check(errno == EAGAIN, "fill /dev/log");
    ::close(client);
  }

 private:
  int fd_ = -1;
  std::vector<std::string> lines_;
};

/// A temporary state directory and config watching the fixtures started with its tag.
class ServiceDir {
 public:
  explicit ServiceDir(const std::string& sink) {
    tag_ = "--tag=" + dir_.name();
    write(sink);
    std::ofstream(dir_ / "query.json")
        << R"({"state_dir": ")" << (dir_ / "state").string() << R"("})";
  }
  ServiceDir(const ServiceDir&) = delete;
  ServiceDir& operator=(const ServiceDir&) = delete;

  /// `sink` is one sink's name, or a JSON list of sinks.
  void write(const std::string& sink) const {
    const auto alerts =
        sink.starts_with("[") ? R"("sinks": )" + sink : R"("sink": ")" + sink + "\"";
    std::ofstream(config())
        << R"({"state_dir": ")" << (dir_ / "state").string()
        << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)"
        << (dir_ / "api.sock").string() << R"("]}, "sampling": {"interval_ms": 300}, "alerts": {)"
        << alerts << R"(}, "targets": [{"name": "alert-fixtures", "cmdline": ")" << tag_
        << R"(", "hang_threshold_ms": 1000}]})";
  }
  [[nodiscard]] std::unique_ptr<FixtureProcess> fixture(const std::string& scenario,
                                                        const std::string& arg = "") const {
    return std::make_unique<FixtureProcess>(scenario, arg, tag_);
  }
  [[nodiscard]] std::string config() const { return (dir_ / "wctmon.json").string(); }
  [[nodiscard]] std::filesystem::path log() const { return dir_ / "service.log"; }
  [[nodiscard]] std::string logText() const { return readFile(log()); }

  /// The recorded incidents of `pid` of `kind` ("deadlock" or "hang"), from `wctmon incidents`.
  [[nodiscard]] std::vector<nlohmann::json> incidents(int pid, const std::string& kind) const {
    const auto r = runCommand(
        {wctmonPath(), "incidents", "--config", (dir_ / "query.json").string(), "--json"});
    if (r.exit_code != 0) throw std::runtime_error("wctmon incidents failed: " + r.err);
    std::vector<nlohmann::json> out;
    const auto list = nlohmann::json::parse(r.out);
    for (const auto& i : list["incidents"]) {
      if (i["pid"] == pid && i["kind"] == "INCIDENT_KIND_" + kind) out.push_back(i);
    }
    return out;
  }

 private:
  testing::TempDir dir_{"alerts-service"};
  std::string tag_;
};

/// `wctmon run` in the background, its output in the directory's log file.
class Service {
 public:
  explicit Service(const ServiceDir& dir) {
    const auto logged_before = dir.logText().size();
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(dir.log().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      const std::string config = dir.config();
      ::execl(wctmonPath(), wctmonPath(), "run", "--config", config.c_str(), nullptr);
      _exit(127);
    }
    if (!waitFor([&] {
          return dir.logText().find("service started", logged_before) != std::string::npos;
        }))
      throw std::runtime_error("the service did not start: " + dir.logText());
  }
  ~Service() {
    if (pid_ > 0) stop(SIGKILL);
  }
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  void signal(int signal) const { ::kill(pid_, signal); }
  /// Sends `signal` and returns the exit status.
  int stop(int signal) {
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

/// The journal entry with `message_id` whose field `name` is `value`, once journald has it.
nlohmann::json journalEntry(const std::string& message_id, const std::string& name,
                            const std::string& value) {
  nlohmann::json found;
  waitFor([&] {
    for (const auto& e : Journald::entries(message_id)) {
      if (e.contains(name) && e[name] == value) {
        found = e;
        return true;
      }
    }
    return false;
  });
  return found;
}

/// Every field the README documents for an incident alert.
void expectIncidentFields(const nlohmann::json& e, const char* message_id, const char* priority,
                          const nlohmann::json& incident, pid_t service) {
  const auto pid = std::to_string(incident["pid"].get<int>());
  EXPECT_EQ(e.value("MESSAGE_ID", ""), message_id) << e.dump();
  EXPECT_EQ(e.value("PRIORITY", ""), priority) << e.dump();
  EXPECT_EQ(e.value("SYSLOG_IDENTIFIER", ""), "wctmon") << e.dump();
  EXPECT_EQ(e.value("_PID", ""), std::to_string(service)) << e.dump();
  EXPECT_EQ(e.value("WCTMON_PID", ""), pid) << e.dump();
  EXPECT_EQ(e.value("WCTMON_PIDS", ""), pid) << e.dump();
  EXPECT_EQ(e.value("WCTMON_PROCESS", ""), "wctmon-fixture") << e.dump();
  EXPECT_EQ(e.value("WCTMON_INCIDENT_ID", ""), incident["id"].get<std::string>()) << e.dump();
  EXPECT_EQ(e.value("WCTMON_TARGET", ""), "alert-fixtures") << e.dump();
  std::string threads;
  for (const auto& t : incident["threads"]) {
    threads += (threads.empty() ? "" : " ") + pid + ":" + std::to_string(t["tid"].get<int>());
  }
  EXPECT_EQ(e.value("WCTMON_THREADS", ""), threads) << e.dump();
  EXPECT_NE(e.value("MESSAGE", ""), "") << e.dump();
}

TEST(Alerts, DeadlockHangAndResolvedReachARealJournaldWithEveryDocumentedField) {
  PrivateMounts mounts;
  Journald journald;
  ServiceDir dir("journald");
  Service service(dir);
  EXPECT_NE(dir.logText().find("alerts go to journald (/run/systemd/journal/socket)"),
            std::string::npos)
      << dir.logText();
  const auto started = journalEntry(kStartedId, "_PID", std::to_string(service.pid()));
  EXPECT_EQ(started.value("SYSLOG_IDENTIFIER", ""), "wctmon") << started.dump();
  EXPECT_EQ(started.value("PRIORITY", ""), "6") << started.dump();

  auto deadlocked = dir.fixture("mutex-abba");
  auto hung = dir.fixture("long-chain", "2");  // t0 waits for t1's mutex; t1 pauses for good
  const int deadlock_pid = deadlocked->pid();
  const int hang_pid = hung->pid();

  const auto deadlock = journalEntry(kDeadlockId, "WCTMON_PID", std::to_string(deadlock_pid));
  ASSERT_FALSE(deadlock.is_null()) << "no deadlock entry in the journal\n" << dir.logText();
  const auto deadlocks = dir.incidents(deadlock_pid, "DEADLOCK");
  ASSERT_EQ(deadlocks.size(), 1U);
  ASSERT_EQ(deadlocks[0]["threads"].size(), 2U);
  EXPECT_EQ(deadlocks[0]["threads"][0]["tid"], deadlocked->tid("a"));
  EXPECT_EQ(deadlocks[0]["threads"][1]["tid"], deadlocked->tid("b"));
  expectIncidentFields(deadlock, kDeadlockId, "2", deadlocks[0], service.pid());
  EXPECT_EQ(deadlock.value("WCTMON_INCIDENT_KIND", ""), "deadlock");
  EXPECT_NE(deadlock.value("MESSAGE", "").find("deadlock"), std::string::npos) << deadlock.dump();
  // journalctl -x explains it from the shipped catalog, the entry's fields filled in.
  PrivateMounts::privateCatalog(WCTMON_JOURNAL_CATALOG);
  const auto explained =
      runCommand({"journalctl", "-x", "--no-pager", std::string("MESSAGE_ID=") + kDeadlockId,
                  "WCTMON_PID=" + std::to_string(deadlock_pid)});
  EXPECT_NE(explained.out.find("Subject: Deadlock in wctmon-fixture (pid " +
                               std::to_string(deadlock_pid) + ")"),
            std::string::npos)
      << explained.out << explained.err;
  EXPECT_NE(explained.out.find("wctctl incidents show " + deadlocks[0]["id"].get<std::string>()),
            std::string::npos)
      << explained.out;

  const auto hang = journalEntry(kHangId, "WCTMON_PID", std::to_string(hang_pid));
  ASSERT_FALSE(hang.is_null()) << "no hang entry in the journal\n" << dir.logText();
  const auto hangs = dir.incidents(hang_pid, "HANG");
  ASSERT_EQ(hangs.size(), 1U);
  ASSERT_EQ(hangs[0]["threads"].size(), 1U);
  EXPECT_EQ(hangs[0]["threads"][0]["tid"], hung->tid("t0"));
  expectIncidentFields(hang, kHangId, "3", hangs[0], service.pid());
  EXPECT_EQ(hang.value("WCTMON_INCIDENT_KIND", ""), "hang");

  deadlocked.reset();  // killed: both incidents resolve
  hung.reset();
  const auto deadlock_resolved =
      journalEntry(kResolvedId, "WCTMON_PID", std::to_string(deadlock_pid));
  ASSERT_FALSE(deadlock_resolved.is_null()) << dir.logText();
  expectIncidentFields(deadlock_resolved, kResolvedId, "6", deadlocks[0], service.pid());
  EXPECT_EQ(deadlock_resolved.value("WCTMON_INCIDENT_KIND", ""), "deadlock");
  EXPECT_NE(deadlock_resolved.value("MESSAGE", "").find("resolved (the process exited)"),
            std::string::npos)
      << deadlock_resolved.dump();
  const auto hang_resolved = journalEntry(kResolvedId, "WCTMON_PID", std::to_string(hang_pid));
  ASSERT_FALSE(hang_resolved.is_null()) << dir.logText();
  expectIncidentFields(hang_resolved, kResolvedId, "6", hangs[0], service.pid());
  EXPECT_EQ(hang_resolved.value("WCTMON_INCIDENT_KIND", ""), "hang");

  // A reload refused for a broken file is a config-error entry; a stop is a stopped one.
  std::ofstream(dir.config()) << R"({"sampling": {"interval_ms": "fast"}})";
  service.signal(SIGHUP);
  const auto refused = journalEntry(kConfigErrorId, "_PID", std::to_string(service.pid()));
  EXPECT_EQ(refused.value("PRIORITY", ""), "3") << refused.dump();
  EXPECT_NE(refused.value("MESSAGE", "").find("/sampling/interval_ms"), std::string::npos)
      << refused.dump();
  const auto service_pid = std::to_string(service.pid());
  EXPECT_EQ(service.stop(SIGTERM), 0);
  const auto stopped = journalEntry(kStoppedId, "_PID", service_pid);
  EXPECT_EQ(stopped.value("SYSLOG_IDENTIFIER", ""), "wctmon") << stopped.dump();
}

TEST(Alerts, TwoSinksEachGetEveryAlertAndASyslogThatStopsReadingHoldsUpNoOneElse) {
  PrivateMounts mounts;
  mounts.privateDev();
  Journald journald;
  SyslogSocket syslog;
  syslog.fill();
  ServiceDir dir(R"(["journald", {"type": "syslog", "queue": 100}])");
  Service service(dir);
  EXPECT_NE(dir.logText().find("alerts go to journald (/run/systemd/journal/socket)"),
            std::string::npos)
      << dir.logText();
  EXPECT_NE(dir.logText().find("alerts go to syslog (/dev/log)"), std::string::npos)
      << dir.logText();
  // While syslog(3) waits on the full socket: the deadlock is stored and journald has its alert.
  auto fx = dir.fixture("mutex-abba");
  ASSERT_TRUE(waitFor([&] { return !dir.incidents(fx->pid(), "DEADLOCK").empty(); }))
      << dir.logText();
  const auto pid = std::to_string(fx->pid());
  EXPECT_FALSE(journalEntry(kStartedId, "_PID", std::to_string(service.pid())).empty());
  EXPECT_FALSE(journalEntry(kDeadlockId, "WCTMON_PID", pid).empty());
  for (const auto& line : syslog.lines()) {
    EXPECT_EQ(line.find("wctmon["), std::string::npos) << "syslog read nothing yet: " << line;
  }
  // Ten seconds on, the daemon reads again, and gets every alert, in order.
  std::this_thread::sleep_for(10s);
  EXPECT_NE(syslog.lineWith({"wctmon[", std::string("MESSAGE_ID=") + kStartedId}, 10s), "");
  EXPECT_NE(
      syslog.lineWith({"wctmon[", std::string("MESSAGE_ID=") + kDeadlockId, "PID=" + pid}, 10s),
      "");
}

TEST(Alerts, WithoutJournaldTheyGoToSyslogAndTheServiceSaysSo) {
  PrivateMounts mounts;
  mounts.privateDev();
  SyslogSocket syslog;
  ServiceDir dir("journald");
  Service service(dir);
  EXPECT_NE(dir.logText().find("alerts go to syslog (/dev/log): sink journald, but "
                               "journald is not running here"),
            std::string::npos)
      << dir.logText();
  EXPECT_NE(syslog.lineWith({"wctmon[", std::string("MESSAGE_ID=") + kStartedId}, 10s), "")
      << "no service-started line over syslog";

  auto fx = dir.fixture("mutex-abba");
  const auto line = syslog.lineWith(
      {std::string("MESSAGE_ID=") + kDeadlockId, "PID=" + std::to_string(fx->pid()) + " "}, 20s);
  ASSERT_NE(line, "") << "no deadlock line over syslog\n" << dir.logText();
  // LOG_DAEMON (3 << 3) | LOG_CRIT (2); the fields a log search needs.
  EXPECT_EQ(line.rfind("<26>", 0), 0U) << line;
  EXPECT_NE(line.find("wctmon[" + std::to_string(service.pid()) + "]: "), std::string::npos)
      << line;
  const auto incidents = dir.incidents(fx->pid(), "DEADLOCK");
  ASSERT_EQ(incidents.size(), 1U);
  for (const auto& field :
       {"TARGET=alert-fixtures", "INCIDENT_KIND=deadlock", "PROCESS=wctmon-fixture"}) {
    EXPECT_NE(line.find(field), std::string::npos) << field << " missing: " << line;
  }
  EXPECT_NE(line.find("INCIDENT_ID=" + incidents[0]["id"].get<std::string>()), std::string::npos)
      << line;
  EXPECT_NE(line.find("THREADS=" + std::to_string(fx->pid()) + ":" + std::to_string(fx->tid("a"))),
            std::string::npos)
      << line;
}

TEST(Alerts, WithNeitherTheServiceSaysOnceThatAlertsAreLostAndARouteFoundAtReloadIsUsed) {
  PrivateMounts mounts;
  mounts.privateDev();
  ServiceDir dir("journald");
  Service service(dir);
  auto fx = dir.fixture("mutex-abba");
  ASSERT_TRUE(waitFor([&] { return !dir.incidents(fx->pid(), "DEADLOCK").empty(); }))
      << dir.logText();
  const std::string lost =
      "alerts are NOT delivered: sink journald, but neither journald "
      "(/run/systemd/journal/socket) nor syslog (/dev/log) is running here";
  EXPECT_EQ(occurrences(dir.logText(), lost), 1U) << dir.logText();
  EXPECT_NE(dir.logText().find("warning " + lost), std::string::npos) << dir.logText();

  // A syslog daemon comes up; the reload says where alerts go now, and they do.
  SyslogSocket syslog;
  service.signal(SIGHUP);
  ASSERT_TRUE(waitFor([&] {
    return dir.logText().find("alerts go to syslog (/dev/log)") != std::string::npos;
  })) << dir.logText();
  const auto pid = fx->pid();
  fx.reset();
  EXPECT_NE(
      syslog.lineWith(
          {std::string("MESSAGE_ID=") + kResolvedId, "PID=" + std::to_string(pid) + " "}, 20s),
      "")
      << dir.logText();
  EXPECT_EQ(occurrences(dir.logText(), lost), 1U) << dir.logText();
}

TEST(Alerts, SyslogAskedForWithoutDevLogIsSaidAndJournaldTakesThemWhenRunning) {
  PrivateMounts mounts;
  mounts.privateDev();
  ServiceDir dir("syslog");
  {
    Service service(dir);
    EXPECT_EQ(
        occurrences(dir.logText(), "warning alerts are NOT delivered: sink syslog, but neither"),
        1U)
        << dir.logText();
    EXPECT_EQ(service.stop(SIGTERM), 0);
  }
  Journald journald;
  Service service(dir);
  EXPECT_NE(dir.logText().find("alerts go to journald (/run/systemd/journal/socket): sink syslog, "
                               "but nothing listens on /dev/log"),
            std::string::npos)
      << dir.logText();
  const auto started = journalEntry(kStartedId, "_PID", std::to_string(service.pid()));
  EXPECT_EQ(started.value("SYSLOG_IDENTIFIER", ""), "wctmon") << started.dump();
}

TEST(Alerts, TheEventLogAskedForOnLinuxIsJournaldAndTheStartSaysWhichVersionAndConfig) {
  // A configuration shared with Windows servers still alerts here.
  PrivateMounts mounts;
  Journald journald;
  ServiceDir dir("eventlog");
  Service service(dir);
  EXPECT_NE(
      dir.logText().find("alerts go to journald (/run/systemd/journal/socket): sink eventlog, "
                         "which is Windows's"),
      std::string::npos)
      << dir.logText();
  const auto started = journalEntry(kStartedId, "_PID", std::to_string(service.pid()));
  EXPECT_EQ(started.value("WCTMON_VERSION", ""), WCTMON_VERSION) << started.dump();
  EXPECT_NE(started.value("WCTMON_CONFIG", "").find("wctmon.json"), std::string::npos)
      << started.dump();
}

TEST(Alerts, ADamagedStoreMovedAsideAtStartIsOneAlertWithSqlitesReasonAndTheNewPlace) {
  PrivateMounts mounts;
  Journald journald;
  ServiceDir dir("journald");
  const auto state = std::filesystem::path(dir.config()).parent_path() / "state";
  std::filesystem::create_directories(state);
  std::ofstream(state / "incidents.db", std::ios::binary) << std::string(8192, 'x');
  Service service(dir);
  const auto e = journalEntry(kStoreFaultId, "_PID", std::to_string(service.pid()));
  ASSERT_FALSE(e.is_null()) << dir.logText();
  EXPECT_EQ(e.value("PRIORITY", ""), "3") << e.dump();
  const auto reason = e.value("WCTMON_REASON", "");
  EXPECT_NE(reason.find((state / "incidents.db").string() + ": "), std::string::npos) << reason;
  EXPECT_NE(reason.find("file is not a database"), std::string::npos) << reason;
  EXPECT_NE(reason.find("moved aside to " + (state / "incidents.db.corrupt-").string()),
            std::string::npos)
      << reason;
  EXPECT_EQ(e.value("MESSAGE", ""), reason) << e.dump();
  EXPECT_EQ(Journald::entries(kStoreFaultId).size(), 1U);
}

TEST(Alerts, AFullDiskIsOneStoreFaultAlertNotOnePerIncidentAndOneWhenItTakesWritesAgain) {
  PrivateMounts mounts;
  Journald journald;
  ServiceDir dir("journald");
  const auto state = std::filesystem::path(dir.config()).parent_path() / "state";
  std::filesystem::create_directories(state);
  check(::mount("tmpfs", state.c_str(), "tmpfs", 0, "size=160k,mode=700") == 0, "mount tmpfs");
  Service service(dir);
  {
    const int fd = ::open((state / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const std::string block(4096, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
  }
  std::vector<std::unique_ptr<FixtureProcess>> fixtures;
  for (int i = 0; i < 3; ++i) fixtures.push_back(dir.fixture("mutex-abba"));
  const auto fault = journalEntry(kStoreFaultId, "_PID", std::to_string(service.pid()));
  ASSERT_FALSE(fault.is_null()) << dir.logText();
  EXPECT_EQ(fault.value("PRIORITY", ""), "3") << fault.dump();
  EXPECT_NE(fault.value("WCTMON_REASON", "").find("database or disk is full"), std::string::npos)
      << fault.dump();
  // Three incidents and seconds of retries later, still one.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(Journald::entries(kStoreFaultId).size(), 1U);
  std::filesystem::remove(state / "filler");
  const auto recovered = journalEntry(kStoreRecoveredId, "_PID", std::to_string(service.pid()));
  ASSERT_FALSE(recovered.is_null()) << dir.logText();
  EXPECT_EQ(recovered.value("PRIORITY", ""), "6") << recovered.dump();
  for (const auto& fx : fixtures) {
    EXPECT_FALSE(dir.incidents(fx->pid(), "DEADLOCK").empty()) << dir.logText();
  }
  service.stop(SIGTERM);
  ::umount2(state.c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace wctmon
