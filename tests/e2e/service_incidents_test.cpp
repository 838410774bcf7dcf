// What the service records of a deadlock across processes and of a process that execs: the real
// service on a temporary config, real fixtures, incidents read back with `wctmon incidents --json`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "support/programs.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::fixturePath;
using testing::FixtureProcess;
using testing::runCommand;
using testing::wctmonPath;

constexpr int kIntervalMs = 300;

using testing::readFile;

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 15s) {
  return testing::waitFor(done, timeout, 50ms);
}

/// An account other than root to run the service as, with these capabilities only (setpriv's
/// form: "+sys_ptrace,+net_admin"), as the systemd unit runs it.
struct Account {
  uid_t uid;
  gid_t gid;
  std::string capabilities;
};

/// `wctmon run` on a temporary state directory, watching what `targets` select; stopped and
/// cleaned up when destroyed. Each test selects its own fixtures by a tag in their command line.
class Service {
 public:
  /// `targets` is a JSON array in which "TAG" stands for this service's tag, and "SELF" for a
  /// pattern of the service's own command line. With `account`, the service runs as it, its
  /// directory its own, as systemd makes the unit's state directory.
  explicit Service(std::string targets, const std::optional<Account>& account = std::nullopt) {
    tag_ = "--tag=" + dir_.name();
    for (auto at = targets.find("TAG"); at != std::string::npos; at = targets.find("TAG"))
      targets.replace(at, 3, tag_);
    const auto self = "--config [^ ]*" + dir_.name() + "/wctmon.json";
    for (auto at = targets.find("SELF"); at != std::string::npos; at = targets.find("SELF"))
      targets.replace(at, 4, self);
    std::ofstream(config())
        << R"({"state_dir": ")" << (dir_ / "state").string()
        << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)"
        << (dir_ / "api.sock").string() << R"("]}, "sampling": {"interval_ms": )" << kIntervalMs
        << R"(}, "alerts": {"sink": "none"}, "log": {"level": "debug"},)"
        << R"( "targets": )" << targets << "}";
    std::ofstream(query()) << R"({"state_dir": ")" << (dir_ / "state").string() << R"("})";
    std::vector<std::string> argv{wctmonPath(), "run", "--config", config()};
    if (account) {
      if (::chown(dir_.path().c_str(), account->uid, account->gid) != 0) {
        throw std::runtime_error("cannot give the service's directory to its account");
      }
      const auto& caps = account->capabilities;
      argv.insert(argv.begin(),
                  {"setpriv", "--reuid", std::to_string(account->uid), "--regid",
                   std::to_string(account->gid), "--clear-groups", "--inh-caps", caps,
                   "--ambient-caps", caps, "--bounding-set", "-all," + caps, "--no-new-privs"});
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      _exit(127);
    }
    started_ =
        waitFor([&] { return readFile(log()).find("service started") != std::string::npos; });
  }
  ~Service() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  [[nodiscard]] bool started() const { return started_; }
  /// Whether the service is still running (not ended, by a signal or otherwise).
  [[nodiscard]] bool running() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }
  [[nodiscard]] const std::string& tag() const { return tag_; }
  [[nodiscard]] std::string log() const { return (dir_ / "service.log").string(); }
  [[nodiscard]] std::string logText() const { return readFile(log()); }

  /// Every stored incident.
  [[nodiscard]] json incidents() const {
    const auto r = runCommand({wctmonPath(), "incidents", "--config", query(), "--json"});
    if (r.exit_code != 0) throw std::runtime_error("wctmon incidents failed: " + r.err);
    return json::parse(r.out)["incidents"];
  }

  /// The deadlock incidents that list `pid` among their processes (in `state` when given).
  [[nodiscard]] std::vector<json> deadlocksOf(int pid, const std::string& state = "") const {
    std::vector<json> out;
    for (const auto& i : incidents()) {
      if (i["kind"] != "INCIDENT_KIND_DEADLOCK" || (!state.empty() && i["state"] != state))
        continue;
      const auto& ps = i["processes"];
      if (i["pid"] == pid ||
          std::any_of(ps.begin(), ps.end(), [&](const json& p) { return p["pid"] == pid; })) {
        out.push_back(i);
      }
    }
    return out;
  }

 private:
  [[nodiscard]] std::string config() const { return (dir_ / "wctmon.json").string(); }
  [[nodiscard]] std::string query() const { return (dir_ / "query.json").string(); }

  testing::TempDir dir_{"incidents"};
  std::string tag_;
  pid_t pid_ = -1;
  bool started_ = false;
};

std::vector<int> pidsOf(const json& incident) {
  std::vector<int> out;
  for (const auto& p : incident["processes"]) out.push_back(p["pid"].get<int>());
  std::sort(out.begin(), out.end());
  return out;
}

/// Two processes, each holding one file lock and waiting for the other's, both watched: one
/// incident, from open to resolve, listing both.
void expectOneIncidentForAFileLockAbba(const std::string& kind) {
  Service service(R"([{"name": "lockers", "cmdline": "TAG", "out_of_proc": true}])");
  ASSERT_TRUE(service.started()) << service.logText();
  FixtureProcess fx("file-lock-abba", kind, service.tag());
  const int parent = fx.pid();
  const int child = fx.child("child");
  // Both processes are watched (the child has the parent's command line).
  ASSERT_TRUE(waitFor([&] {
    const auto log = service.logText();
    return log.find("(pid " + std::to_string(child) + ") for target") != std::string::npos &&
           log.find("(pid " + std::to_string(parent) + ") for target") != std::string::npos;
  })) << service.logText();
  // Recorded at once, then again with its evidence.
  ASSERT_TRUE(waitFor([&] {
    const auto found = service.deadlocksOf(parent);
    return !found.empty() && !found[0].value("evidence", json()).empty();
  })) << service.logText();
  // Both have been sampled many times over with the cycle in place.
  std::this_thread::sleep_for(std::chrono::milliseconds(6 * kIntervalMs));

  auto found = service.deadlocksOf(parent);
  ASSERT_EQ(found.size(), 1U) << json(found).dump(1);
  EXPECT_EQ(service.deadlocksOf(child).size(), 1U);
  const json i = found[0];  // a copy: `found` is read again below
  EXPECT_EQ(i["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(pidsOf(i), (std::vector<int>{parent, child}));
  for (const auto& p : i["processes"]) {
    EXPECT_EQ(p["name"], "wctmon-fixture");
    EXPECT_NE(p["start_time"], "0");
  }
  ASSERT_EQ(i["threads"].size(), 2U);
  EXPECT_EQ(i["threads"][0]["tid"], fx.tid("main"));
  EXPECT_EQ(i["threads"][1]["tid"], fx.tid("child"));
  EXPECT_EQ(i["chains"].size(), 2U) << "each side's own chain";
  EXPECT_EQ(i["evidence"].size(), 2U);

  // The child dies: the cycle cannot outlive it.
  ::kill(child, SIGKILL);
  ASSERT_TRUE(waitFor([&] {
    return !service.deadlocksOf(parent, "INCIDENT_STATE_RESOLVED").empty();
  })) << service.logText();
  found = service.deadlocksOf(parent);
  ASSERT_EQ(found.size(), 1U) << json(found).dump(1);
  EXPECT_EQ(found[0]["id"], i["id"]);
  const auto resolution = found[0]["resolution"].get<std::string>();
  EXPECT_TRUE(resolution == "the cycle is gone" ||
              resolution == "wctmon-fixture (pid " + std::to_string(child) + ") exited")
      << resolution;
}

TEST(ServiceIncidents, AFlockAbbaBetweenTwoProcessesIsOneIncidentListingBoth) {
  expectOneIncidentForAFileLockAbba("flock");
}

TEST(ServiceIncidents, AnOfdLockAbbaBetweenTwoProcessesIsOneIncidentListingBoth) {
  expectOneIncidentForAFileLockAbba("ofd");
}

TEST(ServiceIncidents, ACycleWithOnlyOneProcessWatchedIsOneIncidentListingBoth) {
  // Only the parent: the child's command line is the parent's, so select by pid.
  FixtureProcess fx("file-lock-abba", "flock");
  Service watching(R"([{"name": "parent", "pid": )" + std::to_string(fx.pid()) +
                   R"(, "out_of_proc": true}])");
  ASSERT_TRUE(watching.started()) << watching.logText();
  ASSERT_TRUE(waitFor([&] { return !watching.deadlocksOf(fx.pid()).empty(); }))
      << watching.logText();
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kIntervalMs));
  const auto found = watching.deadlocksOf(fx.pid());
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0]["pid"], fx.pid());
  EXPECT_EQ(pidsOf(found[0]), (std::vector<int>{fx.pid(), fx.child("child")}));
}

TEST(ServiceIncidents, APriorityInheritanceAbbaHeldByADebuggerIsOneIncidentThroughout) {
  Service service(R"([{"name": "pi", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  FixtureProcess fx("mutex-abba", "pi", service.tag());
  const int pid = fx.pid();
  ASSERT_TRUE(waitFor([&] {
    const auto found = service.deadlocksOf(pid);
    return !found.empty() && !found[0].value("evidence", json()).empty();
  })) << service.logText();
  const auto first = service.deadlocksOf(pid);
  ASSERT_EQ(first.size(), 1U);
  ASSERT_EQ(first[0]["threads"].size(), 2U) << first[0].dump(1);
  EXPECT_EQ(first[0]["threads"][0]["tid"], fx.tid("a"));
  EXPECT_EQ(first[0]["threads"][1]["tid"], fx.tid("b"));

  // gdb -p holds every thread for 3 s, then lets go: the deadlock goes on throughout.
  const auto r =
      runCommand({"gdb", "-q", "-nx", "-batch", "-p", std::to_string(pid), "-ex", "shell sleep 3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(6 * kIntervalMs));
  const auto after = service.deadlocksOf(pid);
  ASSERT_EQ(after.size(), 1U) << json(after).dump(1);
  EXPECT_EQ(after[0]["id"], first[0]["id"]);
  EXPECT_EQ(after[0]["state"], "INCIDENT_STATE_OPEN");
  for (const auto& i : service.incidents()) {
    EXPECT_EQ(i["kind"], "INCIDENT_KIND_DEADLOCK") << "no hang beside the deadlock: " << i.dump(1);
  }
}

// A ring of 5,000 threads took the service past 1.8 GB (each thread's chain walked the ring to
// the node limit, in every sample and in the incident), its capture ran for minutes holding up
// every other incident, and samples taken while its threads were stopped for the capture resolved
// it and opened it again.
TEST(ServiceIncidents,
     ARingOfAThousandThreadsIsOneIncidentOfBoundedSizeWithTheFirstThreadsCaptured) {
  Service service(R"([{"name": "ring", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  constexpr int kThreads = 1000;
  FixtureProcess ring("ring", std::to_string(kThreads), service.tag());
  ASSERT_TRUE(waitFor(
      [&] {
        const auto found = service.deadlocksOf(ring.pid());
        return !found.empty() && !found[0].value("evidence", json()).empty();
      },
      60s))
      << service.logText();
  // Sampled many times over, during its capture and after.
  std::this_thread::sleep_for(std::chrono::milliseconds(10 * kIntervalMs));

  const auto all = service.incidents();
  const auto found = service.deadlocksOf(ring.pid());
  ASSERT_EQ(found.size(), 1U) << "resolved and opened again: " << service.logText().substr(0, 4000);
  for (const auto& i : all) {
    EXPECT_FALSE(i["pid"] == ring.pid() && i["kind"] != "INCIDENT_KIND_DEADLOCK")
        << "a thread of the ring is no incident of its own: " << i["summary"];
  }
  const json& i = found[0];
  EXPECT_EQ(i["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(i["threads"].size(), static_cast<std::size_t>(kThreads));
  const auto summary = i["summary"].get<std::string>();
  EXPECT_NE(summary.find("and 984 more"), std::string::npos) << summary.substr(0, 400);

  // Each thread has its chain; one walks the ring to the node limit, the others end at the
  // next thread of the ring.
  ASSERT_EQ(i["chains"].size(), static_cast<std::size_t>(kThreads));
  std::size_t nodes = 0;
  for (const auto& c : i["chains"]) {
    nodes += c["nodes"].size();
    EXPECT_EQ(c["node_count"], 2 * kThreads + 1);
  }
  EXPECT_EQ(nodes, 64U + 3U * (kThreads - 1));

  // The first 32 threads are captured; the rest are named.
  const auto& evidence = i["evidence"];
  ASSERT_EQ(evidence.size(), static_cast<std::size_t>(kThreads));
  int captured = 0;
  for (const auto& e : evidence) {
    if (e.value("captured", false)) {
      ++captured;
    } else {
      EXPECT_EQ(e["error"], "not captured: the evidence is taken from the first 32 threads");
    }
  }
  EXPECT_EQ(captured, 32);
  // No thread of it left stopped.
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(ring.pid()) + "/task")) {
    const auto status = readFile(entry.path() / "status");
    EXPECT_EQ(status.find("State:\tt"), std::string::npos) << entry.path();
    EXPECT_NE(status.find("TracerPid:\t0\n"), std::string::npos) << entry.path();
  }
}

/// Whether a ring of `links` flock(1) commands, each holding its lock file and waiting for its
/// child, which waits for the next lock file (2 x `links` processes, every one watched), is seen
/// as one deadlock of all their processes within a minute.
bool flockRingIsOneDeadlock(int links) {
  Service service(R"([{"name": "flock", "cmdline": "TAG", "out_of_proc": true}])");
  EXPECT_TRUE(service.started()) << service.logText();
  if (!service.started()) return false;
  testing::TempDir locks("flock-ring");
  std::vector<pid_t> ring;
  for (int i = 0; i < links; ++i) {
    const auto mine = (locks / std::to_string(i)).string();
    const auto next = (locks / std::to_string((i + 1) % links)).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      const std::string waits = "sleep 1; exec flock -x " + next + " true " + service.tag();
      ::execlp("flock", "flock", "-x", mine.c_str(), "sh", "-c", waits.c_str(),
               service.tag().c_str(), nullptr);
      _exit(127);
    }
    ring.push_back(pid);
  }
  const bool found = waitFor(
      [&] {
        for (const auto& i : service.incidents()) {
          if (i["kind"] == "INCIDENT_KIND_DEADLOCK" &&
              i["threads"].size() == 2U * static_cast<std::size_t>(links)) {
            return true;
          }
        }
        return false;
      },
      60s);
  for (const pid_t pid : ring) ::kill(-pid, SIGKILL);
  for (const pid_t pid : ring) ::waitpid(pid, nullptr, 0);
  EXPECT_TRUE(found) << service.logText().substr(0, 4000);
  return found;
}

// /proc/locks gives a page per read, and only its first page was read: past some 60 locks the
// waits were unresolved and the cycle of 120 processes never seen.
TEST(ServiceIncidents, ARingOfSixtyFlockCommandsIsOneDeadlockOfAllTheirProcesses) {
  EXPECT_TRUE(flockRingIsOneDeadlock(60));
}

// A sample followed chains into 256 processes at most: a cycle through more was never reported.
// Each member's sample also read the whole ring again (and its confirmation once more): the
// samples now share their reads of the processes they follow into.
TEST(ServiceIncidents, ARingOfTwoHundredFlockCommandsIsOneDeadlockOfAllFourHundredProcesses) {
  EXPECT_TRUE(flockRingIsOneDeadlock(200));
}

TEST(ServiceIncidents, LocksThatRecordNoOwnerOpenHangsNamingThemAndIdleConditionWaitsNone) {
  Service service(R"([{"name": "locks", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  FixtureProcess sem("sem-abba", "", service.tag());
  FixtureProcess pool("parker-pool", "", service.tag());
  ASSERT_TRUE(waitFor([&] {
    int hangs = 0;
    for (const auto& i : service.incidents()) hangs += i["pid"] == sem.pid() ? 1 : 0;
    return hangs >= 2;
  })) << service.logText();
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kIntervalMs));
  std::set<int> hung;
  for (const auto& i : service.incidents()) {
    EXPECT_NE(i["pid"], pool.pid()) << "an idle pool is no hang: " << i.dump(1);
    if (i["pid"] != sem.pid()) continue;
    EXPECT_EQ(i["kind"], "INCIDENT_KIND_HANG");
    EXPECT_NE(i["summary"].get<std::string>().find("POSIX semaphore"), std::string::npos)
        << i["summary"];
    hung.insert(i["threads"][0]["tid"].get<int>());
  }
  EXPECT_TRUE(hung.contains(sem.tid("a")) && hung.contains(sem.tid("b")));
}

/// Compiles Java `source` (class `name`) into `dir` and starts it with `tag` as its argument
/// (so that a target selects it) and its safepoints logged to `dir`/NAME.safepoints.
std::unique_ptr<FixtureProcess> startJava(const testing::TempDir& dir, const std::string& name,
                                          const std::string& source, const std::string& tag,
                                          std::vector<std::string> as = {}) {
  std::ofstream(dir / (name + ".java")) << source;
  const auto built =
      runCommand({"bash", "-c", "cd " + dir.path().string() + " && javac " + name + ".java"});
  EXPECT_EQ(built.exit_code, 0) << built.err;
  const auto log = (dir / (name + ".safepoints")).string();
  as.insert(as.end(),
            {"java", "-Xlog:safepoint=info:file=" + log, "-cp", dir.path().string(), name, tag});
  return std::make_unique<FixtureProcess>(as, 30s);
}

/// Two pairs of Java threads in a cycle each: on monitors, and on ReentrantLocks.
constexpr const char* kJavaAbba = R"(
import java.util.concurrent.locks.ReentrantLock;
public class ServiceAbba {
    static final Object A = new Object(), B = new Object();
    static final ReentrantLock L1 = new ReentrantLock(), L2 = new ReentrantLock();
    public static void main(String[] args) throws Exception {
        new Thread(() -> { synchronized (A) { nap(); synchronized (B) { nap(); } } }, "monitor-1").start();
        new Thread(() -> { synchronized (B) { nap(); synchronized (A) { nap(); } } }, "monitor-2").start();
        new Thread(() -> { L1.lock(); nap(); L2.lock(); }, "lock-1").start();
        new Thread(() -> { L2.lock(); nap(); L1.lock(); }, "lock-2").start();
        System.out.println("{\"pid\":" + ProcessHandle.current().pid() + ",\"threads\":{},\"processes\":{}}");
        Thread.sleep(600000);
    }
    static void nap() { try { Thread.sleep(300); } catch (InterruptedException e) {} }
}
)";

/// Whether a Java deadlock's evidence names Java frames of ServiceAbba.java in every capture.
bool hasJavaFrames(const json& incident) {
  const auto& evidence = incident.value("evidence", json::array());
  return !evidence.empty() && std::all_of(evidence.begin(), evidence.end(), [](const json& e) {
    if (!e.contains("runtime_stack") || e["runtime_stack"]["runtime"] != "Java") return false;
    const auto& frames = e["runtime_stack"]["frames"];
    return std::any_of(frames.begin(), frames.end(),
                       [](const json& f) { return f["file"] == "ServiceAbba.java"; });
  });
}

/// How many thread dumps a JVM's safepoint log shows (a dump is a "PrintThreads" safepoint).
int threadDumpsIn(const std::string& safepoint_log) {
  int n = 0;
  std::istringstream lines(readFile(safepoint_log));
  for (std::string line; std::getline(lines, line);) {
    n += line.find("Safepoint \"PrintThreads\"") != std::string::npos ? 1 : 0;
  }
  return n;
}

TEST(ServiceIncidents, JavaDeadlocksAreIncidentsWithJavaFramesAndTheJvmIsAskedOnce) {
  Service service(R"([{"name": "jvm", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  testing::TempDir dir("jvm");
  auto abba = startJava(dir, "ServiceAbba", kJavaAbba, service.tag());
  auto pool = startJava(dir, "ServicePool", R"(
import java.util.concurrent.*;
public class ServicePool {
    public static void main(String[] a) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        for (int i = 0; i < 5001; i++) { final int n = i; pool.submit(() -> Math.sqrt(n)); }
        System.out.println("{\"pid\":" + ProcessHandle.current().pid() + ",\"threads\":{},\"processes\":{}}");
        Thread.sleep(600000);
    }
}
)",
                        service.tag());
  const auto withEvidence = [&] {
    int n = 0;
    for (const auto& i : service.deadlocksOf(abba->pid())) {
      n += i.value("evidence", json()).empty() ? 0 : 1;
    }
    return n;
  };
  ASSERT_TRUE(waitFor([&] { return withEvidence() == 2; }, 30s)) << service.logText();
  std::this_thread::sleep_for(std::chrono::milliseconds(10 * kIntervalMs));

  const auto deadlocks = service.deadlocksOf(abba->pid());
  ASSERT_EQ(deadlocks.size(), 2U) << json(deadlocks).dump(1);
  for (const auto& i : deadlocks) {
    EXPECT_EQ(i["state"], "INCIDENT_STATE_OPEN");
    EXPECT_TRUE(hasJavaFrames(i)) << i.dump(1);
  }
  for (const auto& i : service.incidents()) {
    EXPECT_NE(i["pid"], pool->pid()) << "an idle pool is no hang: " << i.dump(1);
  }
  // The threads stay where the first dump saw them: no dump after it pauses the JVM again.
  EXPECT_EQ(threadDumpsIn((dir / "ServiceAbba.safepoints").string()), 1);
  EXPECT_LE(threadDumpsIn((dir / "ServicePool.safepoints").string()), 1);
}

// A JVM in a container numbers its threads as its PID namespace does: its thread dump's `nid`s
// were taken for the host's thread ids, and its Java frames were put on no thread (or another's).
TEST(ServiceIncidents, AJavaDeadlockInsideAPidNamespaceHasItsJavaFramesOnTheHostsThreads) {
  Service service(R"([{"name": "jvm", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  testing::TempDir dir("jvm-ns");
  auto abba = startJava(dir, "ServiceAbba", kJavaAbba, service.tag(),
                        {"unshare", "--pid", "--fork", "--mount-proc"});
  // The report's pid is the namespace's; the JVM is the child of unshare.
  const int pid = std::stoi(readFile("/proc/" + std::to_string(abba->pid()) + "/task/" +
                                     std::to_string(abba->pid()) + "/children"));
  const auto withEvidence = [&] {
    int n = 0;
    for (const auto& i : service.deadlocksOf(pid)) {
      n += i.value("evidence", json()).empty() ? 0 : 1;
    }
    return n;
  };
  ASSERT_TRUE(waitFor([&] { return withEvidence() == 2; }, 30s)) << service.logText();
  for (const auto& i : service.deadlocksOf(pid)) {
    EXPECT_TRUE(hasJavaFrames(i)) << i.dump(1);
    for (const auto& t : i["threads"]) {
      EXPECT_TRUE(std::filesystem::exists("/proc/" + std::to_string(pid) + "/task/" +
                                          std::to_string(t["tid"].get<int>())))
          << i.dump(1);
    }
  }
}

/// The capabilities the systemd unit gives its account (AmbientCapabilities=), in setpriv's form.
std::string unitCapabilities() {
  std::istringstream unit(readFile(WCTMON_UNIT_FILE));
  std::string caps;
  for (std::string line; std::getline(unit, line);) {
    if (!line.starts_with("AmbientCapabilities=")) continue;
    std::istringstream names(line.substr(line.find('=') + 1));
    for (std::string name; names >> name;) {
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      caps += (caps.empty() ? "+" : ",+") + name.substr(4);  // "cap_sys_ptrace" -> sys_ptrace
    }
  }
  return caps;
}

TEST(ServiceIncidents, AsTheUnitsAccountWithOnlyItsCapabilitiesOtherUsersDeadlocksAreCaptured) {
  // As the unit runs it: not root (nobody here, wctmon when installed), the unit's capabilities.
  const auto caps = unitCapabilities();
  ASSERT_NE(caps.find("+sys_ptrace"), std::string::npos) << caps;
  Service service(R"([{"name": "others", "cmdline": "TAG", "hang_threshold_ms": 1000}])",
                  Account{65534, 65534, caps});
  ASSERT_TRUE(service.started()) << service.logText();

  // Deadlocks of root and of another account (daemon): their /proc files are theirs alone, their
  // threads are stopped for registers and unwound; the JVM is asked as its own user.
  const std::vector<std::string> as_daemon{"setpriv", "--reuid", "1",
                                           "--regid", "1",       "--clear-groups"};
  FixtureProcess roots("mutex-abba", "", service.tag());
  std::vector<std::string> argv = as_daemon;
  argv.insert(argv.end(), {fixturePath(), "mutex-abba", service.tag()});
  FixtureProcess daemons(argv, 20s);
  testing::TempDir dir("jvm-of-daemon");
  ASSERT_EQ(::chown(dir.path().c_str(), 1, 1), 0);  // the JVM writes its safepoint log there
  auto jvm = startJava(dir, "ServiceAbba", kJavaAbba, service.tag(), as_daemon);

  const auto captured = [&](int pid) {
    const auto found = service.deadlocksOf(pid);
    return !found.empty() && std::all_of(found.begin(), found.end(), [](const json& i) {
      const auto& evidence = i.value("evidence", json::array());
      return !evidence.empty() && std::all_of(evidence.begin(), evidence.end(), [](const json& e) {
        return !e.value("registers", json::array()).empty() &&
               !e.value("frames", json::array()).empty();
      });
    });
  };
  ASSERT_TRUE(waitFor([&] { return captured(roots.pid()) && captured(daemons.pid()); }, 30s))
      << service.logText();
  ASSERT_TRUE(waitFor(
      [&] {
        const auto found = service.deadlocksOf(jvm->pid());
        return found.size() == 2 && std::all_of(found.begin(), found.end(), hasJavaFrames);
      },
      30s))
      << json(service.deadlocksOf(jvm->pid())).dump(1) << service.logText();
  const auto log = service.logText();
  EXPECT_EQ(log.find("neither root nor given CAP_SYS_PTRACE"), std::string::npos) << log;
  EXPECT_EQ(log.find("NoAccess"), std::string::npos) << log;
}

TEST(ServiceIncidents, APostgresDeadlockIsOneIncidentAndTheServerIsAskedOnce) {
  // The cluster's name carries the tag into every title of its processes, which the target
  // selects: the backends, the postmaster and its helpers (idle, so no hang). Each backend is a
  // process: the target follows chains across them.
  Service service(
      R"([{"name": "pg", "cmdline": "TAG", "hang_threshold_ms": 1000, "out_of_proc": true}])");
  ASSERT_TRUE(service.started()) << service.logText();
  testing::TempDir dir("postgres");
  FixtureProcess script(std::vector<std::string>{"bash", "-c",
                                                 testing::postgresDeadlockScript(
                                                     dir, "-c cluster_name=" + service.tag() +
                                                              " -c log_connections=on")},
                        30s);
  const int first = script.child("first"), second = script.child("second");
  ASSERT_TRUE(waitFor([&] { return !service.deadlocksOf(first).empty(); }, 30s))
      << service.logText();
  // Past the interval between asks: backends that have not run since are not asked about again.
  std::this_thread::sleep_for(12s);
  const auto found = service.deadlocksOf(first);
  ASSERT_EQ(found.size(), 1U) << json(found).dump(1);
  EXPECT_EQ(found[0]["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(pidsOf(found[0]), (std::vector<int>{std::min(first, second), std::max(first, second)}));
  EXPECT_NE(found[0].dump().find("PostgreSQL transaction"), std::string::npos) << found[0].dump(1);
  for (const auto& i : service.incidents()) {
    EXPECT_EQ(i["kind"], "INCIDENT_KIND_DEADLOCK") << "no hang beside the deadlock: " << i.dump(1);
  }
  const auto log = readFile((dir / "server.log").string());
  std::size_t asks = 0;
  for (auto at = log.find("application_name=wctmon"); at != std::string::npos;
       at = log.find("application_name=wctmon", at + 1)) {
    ++asks;
  }
  EXPECT_GE(asks, 1U) << log;
  EXPECT_LE(asks, 2U) << log;
}

// Before RE2, a process whose command line was "java " and 28,000-40,000 more characters
// overflowed the stack of the thread matching it against "java.*-Dapp=foo" (SIGSEGV: any local
// user could end the service), and "(a+)+$" against 41 characters froze every sample.
TEST(ServiceIncidents, NoCommandLineAndNoExpressionCrashesOrFreezesTheService) {
  Service service(R"([{"name": "java-app", "cmdline": "java.*-Dapp=foo"},
                      {"name": "nested", "cmdline": "(a+)+$"},
                      {"name": "fixtures", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  const auto idle = [](const std::string& arg0) {
    return std::make_unique<FixtureProcess>(
        std::vector<std::string>{
            "bash", "-c", R"(echo "{\"pid\":$$,\"threads\":{},\"processes\":{}}"; sleep 600)",
            arg0},
        20s);
  };
  const auto long_line = idle("java " + std::string(40000, 'x'));
  const auto nested = idle(std::string(41, 'a') + "!");
  // Sampling goes on: a deadlock that forms meanwhile is stored within seconds.
  FixtureProcess abba("mutex-abba", "", service.tag());
  EXPECT_TRUE(waitFor([&] { return !service.deadlocksOf(abba.pid()).empty(); }, 15s))
      << service.logText();
  EXPECT_TRUE(service.running()) << service.logText();
}

TEST(ServiceIncidents, IdleRuntimesAndTheServiceWatchingItselfOpenNoIncident) {
  // The trial of a monitor people keep running: idle programs of the runtimes servers run, and
  // the service (a gRPC and absl process) watching itself, at a 5 s hang threshold. 45 s here;
  // WCTMON_IDLE_TRIAL_SECONDS=600 makes it the ten-minute trial.
  const char* env = std::getenv("WCTMON_IDLE_TRIAL_SECONDS");
  const auto seconds = std::chrono::seconds(env != nullptr ? std::atoi(env) : 45);
  Service service(R"([{"name": "self", "cmdline": "SELF", "hang_threshold_ms": 5000},
                      {"name": "idle", "cmdline": "TAG", "hang_threshold_ms": 5000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  testing::TempDir dir("idle");
  auto pool = startJava(dir, "IdleBurstPool", R"(
import java.util.concurrent.*;
public class IdleBurstPool {
    public static void main(String[] a) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16);
        ScheduledExecutorService timer = Executors.newScheduledThreadPool(2);
        for (int i = 0; i < 20001; i++) { final int n = i; pool.submit(() -> Math.sqrt(n)); }
        timer.scheduleAtFixedRate(() -> pool.submit(() -> {}), 1, 1, TimeUnit.SECONDS);
        System.out.println("{\"pid\":" + ProcessHandle.current().pid() + ",\"threads\":{},\"processes\":{}}");
        Thread.sleep(3600_000);
    }
}
)",
                        service.tag());
  FixtureProcess python(std::vector<std::string>{"python3", "-c", R"(
import concurrent.futures, json, os, queue, sys, threading, time
pool = concurrent.futures.ThreadPoolExecutor(8)
for f in [pool.submit(pow, i, 2) for i in range(2000)]: f.result()
q = queue.Queue()
threading.Thread(target=q.get, daemon=True).start()
threading.Event()
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
time.sleep(3600)
)",
                                                 service.tag()},
                        20s);
  // A PostgreSQL server with a session idle and one idle in its transaction: both backends wait
  // for their clients.
  FixtureProcess postgres(
      std::vector<std::string>{"bash", "-c",
                               testing::postgresScript(dir, "-c cluster_name=" + service.tag()) +
                                   "(echo 'select 1;'; sleep 3600) | q >/dev/null &\n"
                                   "(echo 'begin; select 1;'; sleep 3600) | q >/dev/null &\n"
                                   "echo '{\"pid\":'$$',\"threads\":{},\"processes\":{}}'\n"
                                   "wait"},
      30s);
  ASSERT_TRUE(waitFor([&] {
    const auto log = service.logText();
    return log.find("for target \"self\"") != std::string::npos &&
           log.find("watching java (pid " + std::to_string(pool->pid())) != std::string::npos;
  })) << service.logText();
  const auto until = std::chrono::steady_clock::now() + seconds;
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5s);
    const auto incidents = service.incidents();
    ASSERT_TRUE(incidents.empty()) << incidents.dump(1);
  }
  // Its workers wake each second for a task: a dump at most every 10 s, as the policy says.
  EXPECT_LE(threadDumpsIn((dir / "IdleBurstPool.safepoints").string()), 1 + seconds.count() / 10);
}

TEST(ServiceIncidents, APythonRLockAbbaIsOneDeadlockIncidentWithPythonFrames) {
  Service service(R"([{"name": "python", "cmdline": "TAG", "hang_threshold_ms": 1000}])");
  ASSERT_TRUE(service.started()) << service.logText();
  // Debian's CPython 3.11; the tag is an argument the program ignores.
  FixtureProcess abba(std::vector<std::string>{"/usr/bin/python3.11", "-c", R"(
import json, os, threading, time
a, b = threading.RLock(), threading.RLock()
ready = threading.Barrier(3)
def first():
    with a:
        ready.wait()
        with b: pass
def second():
    with b:
        ready.wait()
        with a: pass
threads = [threading.Thread(target=f, name=f.__name__, daemon=True) for f in (first, second)]
for t in threads: t.start()
ready.wait()
print(json.dumps({"pid": os.getpid(), "processes": {},
                  "threads": {t.name: t.native_id for t in threads}}), flush=True)
time.sleep(600)
)",
                                               service.tag()},
                      20s);
  ASSERT_TRUE(waitFor([&] {
    const auto found = service.deadlocksOf(abba.pid());
    return !found.empty() && !found[0].value("evidence", json()).empty();
  })) << service.logText();
  std::this_thread::sleep_for(std::chrono::milliseconds(6 * kIntervalMs));
  const auto found = service.deadlocksOf(abba.pid());
  ASSERT_EQ(found.size(), 1U) << json(found).dump(1);
  const auto& i = found[0];
  EXPECT_EQ(i["state"], "INCIDENT_STATE_OPEN");
  std::set<int> tids;
  for (const auto& t : i["threads"]) tids.insert(t["tid"].get<int>());
  EXPECT_EQ(tids, (std::set<int>{abba.tid("first"), abba.tid("second")}));
  ASSERT_EQ(i["evidence"].size(), 2U) << i.dump(1);
  for (const auto& e : i["evidence"]) {
    ASSERT_TRUE(e.contains("runtime_stack")) << e.dump(1);
    EXPECT_EQ(e["runtime_stack"]["runtime"], "Python");
    const auto& frames = e["runtime_stack"]["frames"];
    ASSERT_FALSE(frames.empty()) << e.dump(1);
    const bool first = e["thread"]["tid"] == abba.tid("first");
    EXPECT_EQ(frames[0]["function"], first ? "first" : "second") << e.dump(1);
    EXPECT_EQ(frames[0]["file"], "<string>");
    EXPECT_EQ(frames[0]["line"], first ? 8 : 12) << e.dump(1);
  }
  // No other incident: the threads of the cycle are not hangs of their own.
  for (const auto& other : service.incidents()) {
    EXPECT_EQ(other["kind"], "INCIDENT_KIND_DEADLOCK") << other.dump(1);
  }
}

/// A program started through `bash -c '...; exec PROGRAM ...'`: bash first, then the program,
/// in the same process. Reads its first line of output like FixtureProcess.
class ExecedProcess {
 public:
  explicit ExecedProcess(const std::string& script) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(out[1], STDOUT_FILENO);
      ::execl("/bin/bash", "bash", "-c", script.c_str(), fixturePath(), nullptr);
      _exit(127);
    }
    ::setpgid(pid_, pid_);
    ::close(out[1]);
    out_ = out[0];
  }
  ~ExecedProcess() {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(out_);
  }
  ExecedProcess(const ExecedProcess&) = delete;
  ExecedProcess& operator=(const ExecedProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }

  /// The first line the process prints, or "" after `timeout`.
  [[nodiscard]] std::string firstLine(std::chrono::milliseconds timeout) const {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char c;
      if (::read(out_, &c, 1) != 1) break;
      if (c == '\n') return line;
      line += c;
    }
    return {};
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

TEST(ServiceIncidents, AProcessRenamedByExecIsShownUnderItsNewName) {
  Service service(R"([{"name": "execs", "cmdline": "TAG", "hang_threshold_ms": 60000}])");
  ASSERT_TRUE(service.started());
  // bash, watched long enough for the service to know it as bash, then the fixture deadlocks
  // in the same process ("$0" is the fixture).
  ExecedProcess p("sleep 2; exec \"$0\" mutex-abba normal " + service.tag());
  ASSERT_TRUE(waitFor([&] {
    return service.logText().find("watching bash (pid " + std::to_string(p.pid()) + ")") !=
           std::string::npos;
  })) << service.logText();
  const auto report = p.firstLine(20s);
  ASSERT_FALSE(report.empty());
  ASSERT_EQ(json::parse(report)["pid"], p.pid());  // the same process, now the fixture
  ASSERT_TRUE(waitFor([&] { return !service.deadlocksOf(p.pid()).empty(); })) << service.logText();
  // Within a few intervals the incident, opened by the first sample that saw the cycle, carries
  // the new name (a sample may open it before the catalog has seen the exec).
  ASSERT_TRUE(waitFor(
      [&] {
        const auto found = service.deadlocksOf(p.pid());
        return found.size() == 1 && found[0]["process_name"] == "wctmon-fixture";
      },
      std::chrono::milliseconds(5 * kIntervalMs)))
      << json(service.deadlocksOf(p.pid())).dump(1) << service.logText();
  const auto found = service.deadlocksOf(p.pid());
  ASSERT_EQ(found.size(), 1U);
  ASSERT_EQ(found[0]["processes"].size(), 1U);
  EXPECT_EQ(found[0]["processes"][0]["name"], "wctmon-fixture");
  EXPECT_EQ(found[0]["summary"].get<std::string>().find("bash"), std::string::npos)
      << found[0]["summary"];
  for (const auto& chain : found[0]["chains"]) {
    for (const auto& node : chain["nodes"]) {
      if (node.contains("tid") && node["pid"] == p.pid()) {
        EXPECT_EQ(node["process_name"], "wctmon-fixture");
      }
    }
  }
  EXPECT_NE(service.logText().find("pid " + std::to_string(p.pid()) + " is now wctmon-fixture"),
            std::string::npos);
}

TEST(ServiceIncidents, AProcessThatExecsIntoAProgramItsTargetDoesNotSelectIsNoLongerWatched) {
  Service service(R"([{"name": "shells", "exe": "bash", "cmdline": "TAG"}])");
  ASSERT_TRUE(service.started());
  ExecedProcess p("sleep 2; exec \"$0\" mutex-abba normal " + service.tag());
  const auto pid = std::to_string(p.pid());
  ASSERT_TRUE(waitFor([&] {
    return service.logText().find("watching bash (pid " + pid + ")") != std::string::npos;
  })) << service.logText();
  ASSERT_FALSE(p.firstLine(20s).empty());
  ASSERT_TRUE(waitFor([&] {
    return service.logText().find("no longer watching pid " + pid + ": no target selects it") !=
           std::string::npos;
  })) << service.logText();
  // Whatever a sample caught between the exec and the discovery that saw it is over.
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kIntervalMs));
  EXPECT_TRUE(service.deadlocksOf(p.pid(), "INCIDENT_STATE_OPEN").empty());
}

}  // namespace
}  // namespace wctmon
