// Hangs that are not cycles, end to end on programs written outside this repository: a Python
// HTTP server whose handlers all wait on a condition nobody signals (its liveness probe fails:
// one unresponsive incident with every thread's chain, resolved when it answers again), a server
// that is merely slow (nothing), and a Python program whose threads all wait on each other
// through a lost wakeup (one stall incident, no hangs).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/api_service.h"
#include "support/subprocess.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ApiService;
using testing::FixtureProcess;
using testing::freePort;
using testing::readFile;
using testing::runCommand;
using testing::waitFor;
using testing::wctmonPath;

/// Signals the main thread of `pid` itself: CPython runs its handlers there, and a signal the
/// kernel gives another thread would not wake the main thread from a lock wait.
void signalMainThread(pid_t pid, int signal) { ::syscall(SYS_tgkill, pid, pid, signal); }

/// A ThreadingHTTPServer on `port`: SIGUSR1 makes every later request wait on a condition
/// nobody signals; SIGUSR2 signals it and requests are answered again. `delay_ms` slows each
/// answer.
std::unique_ptr<FixtureProcess> httpServer(int port, const std::string& tag, int delay_ms = 0) {
  const std::string code = R"(
import http.server, json, os, signal, sys, threading, time
hang = threading.Event()
cond = threading.Condition()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if hang.is_set():
            with cond:
                cond.wait()
        time.sleep()" + std::to_string(delay_ms) +
                           R"( / 1000)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
def release(*args):
    hang.clear()
    with cond:
        cond.notify_all()
signal.signal(signal.SIGUSR1, lambda *args: hang.set())
signal.signal(signal.SIGUSR2, release)
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
server.serve_forever()
)";
  return std::make_unique<FixtureProcess>(
      std::vector<std::string>{"python3", "-c", code, std::to_string(port), tag}, 20s);
}

/// `"probe": {...}, ` for an HTTP probe of `port` every `interval_ms`, `timeout_ms` each, 3
/// failures.
std::string httpProbe(int port, int timeout_ms = 250, int interval_ms = 300) {
  return R"("probe": {"type": "http", "url": "http://127.0.0.1:)" + std::to_string(port) +
         R"(/", "interval_ms": )" + std::to_string(interval_ms) + R"(, "timeout_ms": )" +
         std::to_string(timeout_ms) + R"(, "failures": 3}, )";
}

/// The incidents the service recorded, from `wctmon incidents --json`.
json incidents(const ApiService& service) {
  const auto r = runCommand(
      {wctmonPath(), "incidents", "--config", (service.dir() / "wctmon.json").string(), "--json"});
  if (r.exit_code != 0) return json::array();
  return json::parse(r.out).value("incidents", json::array());
}

std::vector<json> ofKind(const json& all, const std::string& kind) {
  std::vector<json> out;
  for (const auto& i : all) {
    if (i.value("kind", "") == "INCIDENT_KIND_" + kind) out.push_back(i);
  }
  return out;
}

/// The incident with `id`, whole (chains and evidence), from `wctmon incidents --id`.
json incident(const ApiService& service, const json& listed) {
  // An int64 is a string in the proto3 JSON mapping.
  const auto& id = listed.at("id");
  const auto r =
      runCommand({wctmonPath(), "incidents", "--config", (service.dir() / "wctmon.json").string(),
                  "--id", id.is_string() ? id.get<std::string>() : id.dump(), "--json"});
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

TEST(OutsideHangs, AServerWhoseHandlersAllWaitIsOneUnresponsiveIncidentUntilItAnswersAgain) {
  const int port = freePort();
  ApiService service("", R"("capture": {"dump": "none"}, )", httpProbe(port));
  auto server = httpServer(port, service.tag());
  const int pid = server->pid();
  // Answering: the probes pass and nothing opens.
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(incidents(service).empty()) << readFile(service.log());

  const auto hung_at = std::chrono::steady_clock::now();
  signalMainThread(pid, SIGUSR1);
  std::vector<json> open;
  ASSERT_TRUE(waitFor(
      [&] {
        open = ofKind(incidents(service), "UNRESPONSIVE");
        return !open.empty();
      },
      10s, 50ms))
      << readFile(service.log());
  const auto detected = std::chrono::steady_clock::now() - hung_at;
  // interval × failures (0.9 s), one probe's deadline, one sample, and room for a loaded
  // machine (the figures are measured by scripts/bench/outside_hangs.py, not here).
  EXPECT_LT(detected, 8s);
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0]["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(open[0]["pid"], pid);
  EXPECT_EQ(open[0]["target"], "fixtures");
  EXPECT_NE(open[0].value("summary", "").find("does not answer: http://127.0.0.1:"),
            std::string::npos)
      << open[0].dump(1);

  // Every thread's chain: the handlers on the condition, the main thread in its poll. The
  // evidence follows the incident into the store once captured.
  json whole;
  EXPECT_TRUE(waitFor(
      [&] {
        whole = incident(service, open[0]);
        return !whole.value("evidence", json::array()).empty();
      },
      10s));
  std::size_t on_condition = 0;
  std::size_t threads = 0;
  for (const auto& chain : whole.value("chains", json::array())) {
    const auto& nodes = chain.at("nodes");
    ++threads;
    if (nodes.size() > 1 && nodes[1].value("object_type", "") == "OBJECT_TYPE_CONDITION") {
      ++on_condition;
    }
  }
  EXPECT_GE(on_condition, 1U) << whole.dump(1);
  EXPECT_GT(threads, on_condition) << "the main thread too: " << whole.dump(1);
  // The evidence of the blocked threads: their stacks.
  std::size_t with_frames = 0;
  for (const auto& c : whole.value("evidence", json::array())) {
    if (!c.value("frames", json::array()).empty()) ++with_frames;
  }
  EXPECT_GE(with_frames, on_condition) << whole.dump(1);

  // It answers again: the same incident resolves, and no other opened meanwhile.
  signalMainThread(pid, SIGUSR2);
  ASSERT_TRUE(waitFor(
      [&] {
        const auto all = ofKind(incidents(service), "UNRESPONSIVE");
        return all.size() == 1 && all[0]["state"] == "INCIDENT_STATE_RESOLVED";
      },
      10s))
      << readFile(service.log());
  const auto resolved = ofKind(incidents(service), "UNRESPONSIVE")[0];
  EXPECT_NE(resolved.value("resolution", "").find("passed again (200 OK"), std::string::npos)
      << resolved.dump(1);
  EXPECT_EQ(ofKind(incidents(service), "HANG").size(), 0U) << "condition waits are no hang";
  std::cout << "unresponsive detected in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(detected).count()
            << " ms (3 failures of a 300 ms probe)\n";
}

TEST(OutsideHangs, AServerThatIsSlowButAnswersWithinTheTimeoutOpensNothing) {
  const int port = freePort();
  ApiService service("", R"("capture": {"dump": "none"}, )", httpProbe(port, 400, 500));
  auto server = httpServer(port, service.tag(), 200);
  std::this_thread::sleep_for(4s);
  EXPECT_TRUE(incidents(service).empty()) << incidents(service).dump(1);
  const auto log = readFile(service.log());
  EXPECT_EQ(log.find("unresponsive incident opened"), std::string::npos) << log;
  EXPECT_NE(log.find("probing target \"fixtures\": http://127.0.0.1:"), std::string::npos) << log;

  // What the probe says, where operators read it: wctctl ps and the metrics.
  const auto ps = runCommand({WCTMON_WCTCTL_PATH, "--server", service.unixTarget(), "--token-file",
                              service.readerToken(), "ps", "-o", "json"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  const auto processes = json::parse(ps.out).at("processes");
  ASSERT_EQ(processes.size(), 1U) << ps.out;
  const auto& probe = processes[0].at("probe");
  EXPECT_EQ(probe.value("state", ""), "passing") << ps.out;
  EXPECT_EQ(probe.value("probe", ""), "http://127.0.0.1:" + std::to_string(port) + "/");
  EXPECT_EQ(probe.value("last_detail", ""), "200 OK");
  ASSERT_FALSE(service.metricsAddress().empty());
  const auto metrics =
      runCommand({"curl", "-s", "http://" + service.metricsAddress() + "/metrics"}).out;
  EXPECT_NE(metrics.find("wctmon_probe_up{target=\"fixtures\"} 1"), std::string::npos) << metrics;
  // (Its first probes may have failed: the server started after the service.)
  EXPECT_NE(metrics.find("wctmon_probe_unresponsive{target=\"fixtures\"} 0"), std::string::npos)
      << metrics;
}

TEST(OutsideHangs, ALostWakeupThatLeavesEveryThreadWaitingIsOneStall) {
  ApiService service("", R"("capture": {"dump": "none"}, )");
  // The main thread joins a worker that waits on a condition nobody signals; SIGUSR1 (run by
  // the main thread) signals it at last.
  auto program = std::make_unique<FixtureProcess>(std::vector<std::string>{"python3", "-c", R"(
import json, os, signal, threading, time
cond = threading.Condition()
def worker():
    with cond:
        cond.wait()
def wake(*args):
    with cond:
        cond.notify_all()
signal.signal(signal.SIGUSR1, wake)
t = threading.Thread(target=worker)
t.start()
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
t.join()
time.sleep(600)
)",
                                                                           service.tag()},
                                                  20s);
  const int pid = program->pid();
  std::vector<json> stalls;
  ASSERT_TRUE(waitFor(
      [&] {
        stalls = ofKind(incidents(service), "STALL");
        return !stalls.empty();
      },
      15s))
      << readFile(service.log());
  ASSERT_EQ(stalls.size(), 1U);
  EXPECT_EQ(stalls[0]["pid"], pid);
  EXPECT_EQ(stalls[0]["threads"].size(), 2U) << "both threads, one incident: " << stalls[0].dump(1);
  EXPECT_NE(stalls[0].value("summary", "").find("is stalled: all 2 threads have been blocked"),
            std::string::npos)
      << stalls[0].dump(1);
  EXPECT_EQ(incident(service, stalls[0]).value("chains", json::array()).size(), 2U);
  // Nothing else: a stall is one incident, not one per thread.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(incidents(service).size(), 1U) << incidents(service).dump(1);

  signalMainThread(pid, SIGUSR1);
  ASSERT_TRUE(waitFor(
      [&] {
        const auto all = ofKind(incidents(service), "STALL");
        return all.size() == 1 && all[0]["state"] == "INCIDENT_STATE_RESOLVED";
      },
      10s))
      << readFile(service.log());
  // Sleeping now: waiting for time, not for itself, is no stall.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(ofKind(incidents(service), "STALL").size(), 1U);
}

}  // namespace
}  // namespace wctmon

namespace wctmon {
namespace {

/// Busy threads looked for after 2 s at a fifth of a core: the tests share the machine's cores with
/// other tests.
constexpr const char* kBusyDetection =
    R"("capture": {"dump": "none"}, "detection": {"busy": {"threshold_ms": 2000, "cpu_percent": 20}}, )";

TEST(OutsideHangs, AThreadSpinningInOneFunctionIsOneBusyIncidentNamingIt) {
  ApiService service("", kBusyDetection);
  FixtureProcess fixture("spin", "", service.tag());
  const int spinner = fixture.tid("spinner");
  std::vector<json> busy;
  ASSERT_TRUE(waitFor(
      [&] {
        busy = ofKind(incidents(service), "BUSY");
        return !busy.empty();
      },
      20s))
      << readFile(service.log());
  ASSERT_EQ(busy.size(), 1U);
  EXPECT_EQ(busy[0]["pid"], fixture.pid());
  ASSERT_EQ(busy[0]["threads"].size(), 1U);
  EXPECT_EQ(busy[0]["threads"][0]["tid"], spinner);
  const auto summary = busy[0].value("summary", "");
  EXPECT_NE(summary.find("within the same 1 function: (anonymous namespace)::spinOnFlag("),
            std::string::npos)
      << summary;
  // Its evidence: the spinning thread's stack, taken without waiting for it to block.
  json whole;
  EXPECT_TRUE(waitFor(
      [&] {
        whole = incident(service, busy[0]);
        return !whole.value("evidence", json::array()).empty();
      },
      10s));
  EXPECT_NE(whole.dump().find("spinOnFlag"), std::string::npos) << whole.dump(1);

  ASSERT_TRUE(fixture.tell("stop"));
  ASSERT_TRUE(waitFor(
      [&] {
        const auto all = ofKind(incidents(service), "BUSY");
        return all.size() == 1 && all[0]["state"] == "INCIDENT_STATE_RESOLVED";
      },
      10s))
      << readFile(service.log());
}

TEST(OutsideHangs, ACompressionLoopOverChangingDataIsWorkNotABusyHang) {
  ApiService service("", kBusyDetection);
  auto program = std::make_unique<FixtureProcess>(std::vector<std::string>{"python3", "-c", R"(
import json, os, random, zlib
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
while True:
    zlib.compress(random.randbytes(1 << 20))
)",
                                                                           service.tag()},
                                                  20s);
  // Busy past the threshold, its frames sampled, and judged working.
  ASSERT_TRUE(waitFor(
      [&] {
        return readFile(service.log()).find("it is working, not spinning") != std::string::npos;
      },
      20s))
      << readFile(service.log());
  EXPECT_TRUE(ofKind(incidents(service), "BUSY").empty()) << incidents(service).dump(1);
}

}  // namespace
}  // namespace wctmon
