// The API of a real wctmond, driven by an independent client (Python's grpcio, with stubs
// generated from the .proto files at test time) over the Unix socket and loopback TCP: tokens
// and roles, health, reflection, targets, processes and incidents of a fixture that really
// deadlocks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "support/api_service.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FixtureProcess;
using testing::readFile;
using testing::residentBytesOf;
using testing::runCommand;
using testing::waitFor;
using testing::wctmonPath;

using testing::ApiService;

/// One call through the Python client: {"code": ..., "response"/"details": ...}.
json call(const ApiService& service, const std::string& target, const std::string& token,
          const std::string& method, const json& request = json::object()) {
  const auto r = runCommand({"/usr/bin/python3", WCTMON_API_CLIENT, WCTMON_PROTO_DIR,
                             service.dir().path().string(), target, token, method, request.dump()});
  if (r.exit_code != 0) throw std::runtime_error("api_client.py failed: " + r.err);
  return json::parse(r.out);
}

json admin(const ApiService& service, const std::string& method,
           const json& request = json::object()) {
  return call(service, service.unixTarget(), service.adminToken(), method, request);
}

/// A WatchIncidents client, subscribed once this returns; `options` as api_client.py's "watch"
/// takes them. Its lines: nextEvent().
std::unique_ptr<FixtureProcess> watch(const ApiService& service,
                                      const json& options = json::object(),
                                      const std::string& token = "") {
  return std::make_unique<FixtureProcess>(
      std::vector<std::string>{"/usr/bin/python3", WCTMON_API_CLIENT, WCTMON_PROTO_DIR,
                               service.dir().path().string(), service.unixTarget(),
                               token.empty() ? service.readerToken() : token, "watch",
                               options.dump()},
      20s);
}

TEST(Api, StatusOverTheSocketAndLoopbackWithEitherTokenAndNothingWithout) {
  ApiService service;
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  for (const auto& target : {service.unixTarget(), service.tcpTarget()}) {
    SCOPED_TRACE(target);
    for (const auto& token : {service.adminToken(), service.readerToken()}) {
      const auto status = call(service, target, token, "GetStatus");
      ASSERT_EQ(status["code"], "OK") << status.dump();
      EXPECT_EQ(status["response"]["platform"], "linux");
      EXPECT_EQ(status["response"]["source"]["name"], "linux-proc");
      EXPECT_EQ(status["response"]["source"]["available"], true);
      EXPECT_EQ(status["response"]["healthy"], true);
    }
    const auto none = call(service, target, "-", "GetStatus");
    EXPECT_EQ(none["code"], "UNAUTHENTICATED") << none.dump();
  }
  // Refusals are logged (at most one line in ten seconds), never with a token.
  const auto log = readFile(service.log());
  EXPECT_NE(log.find("refused: no valid token"), std::string::npos) << log;
  EXPECT_EQ(log.find(readFile(service.adminToken()).substr(0, 64)), std::string::npos);
  // The token files were made for the service: only their owner reads them.
  for (const auto& file : {service.adminToken(), service.readerToken()}) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600U) << file;
  }
  struct stat st {};
  ASSERT_EQ(::stat(service.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660U);
}

TEST(Api, ASecondServiceOnTheSameSocketIsRefusedAndTheFirstKeepsIt) {
  ApiService first;
  testing::TempDir dir("api-second");
  std::ofstream(dir / "wctmon.json")
      << R"({"state_dir": ")" << (dir / "state").string()
      << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {"listen": ["unix:)" << first.socket()
      << R"("]}, "alerts": {"sink": "none"}, "targets": []})";
  const auto second = runCommand({wctmonPath(), "run", "--config", (dir / "wctmon.json").string()});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("another service answers on the API socket " + first.socket()),
            std::string::npos)
      << second.err;
  EXPECT_EQ(call(first, first.unixTarget(), first.readerToken(), "GetStatus")["code"], "OK");
}

TEST(Api, HealthAndReflectionNeedNoToken) {
  ApiService service;
  const auto health = call(service, service.unixTarget(), "-", "health");
  EXPECT_EQ(health["response"]["status"], "SERVING") << health.dump();
  const auto reflection = call(service, service.unixTarget(), "-", "reflection");
  ASSERT_EQ(reflection["code"], "OK") << reflection.dump();
  EXPECT_EQ(reflection["response"]["services"],
            json::array({"wctmon.v1.Monitor", "grpc.health.v1.Health"}));
}

/// health_client.py's JSON: `count` Watch calls on `name` for `seconds`, then a Check.
json health(const ApiService& service, const std::string& name, double seconds, int count = 1) {
  const auto r = runCommand({"/usr/bin/python3", WCTMON_HEALTH_CLIENT, service.unixTarget(), name,
                             std::to_string(seconds), std::to_string(count)});
  if (r.exit_code != 0) throw std::runtime_error("health_client.py failed: " + r.err);
  return json::parse(r.out);
}

TEST(Api, HealthWatchSendsAChangeOnlyAndAnUnknownNameStaysUnknown) {
  ApiService service;
  // The server and the API's service: SERVING once, and nothing more while nothing changes
  // (the service sets its status every second).
  for (const std::string name : {"", "wctmon.v1.Monitor"}) {
    const auto watched = health(service, name, 3.5);
    EXPECT_EQ(watched["watches"][0]["statuses"], json::array({"SERVING"})) << watched.dump();
    EXPECT_EQ(watched["watches"][0]["code"], "DEADLINE_EXCEEDED") << watched.dump();
    EXPECT_EQ(watched["check"]["status"], "SERVING") << watched.dump();
  }
  // Any other name: SERVICE_UNKNOWN, once; and it stays unknown after it was watched.
  const auto unknown = health(service, "grpc.health.v1.Health.nope", 2.5);
  EXPECT_EQ(unknown["watches"][0]["statuses"], json::array({"SERVICE_UNKNOWN"})) << unknown.dump();
  EXPECT_EQ(unknown["check"]["code"], "NOT_FOUND") << unknown.dump();
  EXPECT_EQ(health(service, "grpc.health.v1.Health.nope", 0.5)["check"]["code"], "NOT_FOUND");
}

TEST(Api, HealthWatchesNeedNoTokenAndAreCapped) {
  ApiService service;
  const auto many = health(service, "", 4, 70);
  int open = 0;
  int refused = 0;
  for (const auto& w : many["watches"]) {
    if (w["code"] == "DEADLINE_EXCEEDED" && w["statuses"] == json::array({"SERVING"})) ++open;
    if (w["code"] == "RESOURCE_EXHAUSTED") ++refused;
  }
  EXPECT_EQ(open, 64) << many.dump();
  EXPECT_EQ(refused, 6) << many.dump();
  // The refused ones take nothing from a Check, nor from the watches that come after.
  EXPECT_EQ(many["check"]["status"], "SERVING");
  EXPECT_EQ(health(service, "", 1)["watches"][0]["statuses"], json::array({"SERVING"}));
}

TEST(Api, AReflectionOnlyClientDescribesAndCallsEveryMethod) {
  ApiService service;
  for (const std::string version : {"v1", "v1alpha"}) {
    const auto r = runCommand({"/usr/bin/python3", WCTMON_REFLECTION_CLIENT, service.unixTarget(),
                               service.adminToken(), version});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto result = json::parse(r.out);
    EXPECT_EQ(result["services"], json::array({"wctmon.v1.Monitor", "grpc.health.v1.Health",
                                               "grpc.reflection.v1.ServerReflection",
                                               "grpc.reflection.v1alpha.ServerReflection"}))
        << version;
    EXPECT_EQ(result["errors"], json::array()) << version << ": " << result.dump(1);
    // Every method of every service was described and answered, as itself: a request built
    // from reflection's descriptors alone is one the server parses.
    EXPECT_EQ(result["methods"].size(), 15U) << result.dump(1);
    for (const auto& [path, m] : result["methods"].items()) {
      const std::string code = m["code"];
      EXPECT_TRUE(code == "OK" || code == "INVALID_ARGUMENT" || code == "NOT_FOUND" ||
                  (path == "/wctmon.v1.Monitor/WatchIncidents" && code == "DEADLINE_EXCEEDED"))
          << version << " " << path << ": " << m.dump();
    }
    EXPECT_EQ(result["methods"]["/wctmon.v1.Monitor/GetStatus"]["code"], "OK");
    EXPECT_EQ(result["methods"]["/grpc.health.v1.Health/Check"]["code"], "OK");
  }
}

TEST(Api, TargetsAreAddedAndRemovedByTheAdminOnlyAndCheckedLikeTheConfigFile) {
  ApiService service;
  const json target = {{"target",
                        {{"name", "db"},
                         {"exe", "postgres"},
                         {"interval_ms", 500},
                         {"out_of_proc", true},
                         {"wct", {{"com", false}}}}}};
  const auto denied =
      call(service, service.unixTarget(), service.readerToken(), "AddTarget", target);
  EXPECT_EQ(denied["code"], "PERMISSION_DENIED") << denied.dump();

  const auto added = admin(service, "AddTarget", target);
  ASSERT_EQ(added["code"], "OK") << added.dump();
  EXPECT_EQ(added["response"]["origin"], "TARGET_ORIGIN_RUNTIME");
  EXPECT_EQ(added["response"]["hang_threshold_ms"], 30000);  // the file's default
  EXPECT_EQ(added["response"]["wct"],
            json({{"com", false}, {"critical_sections", true}, {"network_io", true}}));

  const auto listed = call(service, service.unixTarget(), service.readerToken(), "ListTargets");
  ASSERT_EQ(listed["code"], "OK") << listed.dump();
  std::vector<std::string> names;
  for (const auto& t : listed["response"]["targets"]) {
    names.push_back(t["name"].get<std::string>() + "/" + t["origin"].get<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fixtures/TARGET_ORIGIN_CONFIG",
                                             "db/TARGET_ORIGIN_RUNTIME"}));

  const auto invalid =
      admin(service, "AddTarget", {{"target", {{"name", "bad"}, {"interval_ms", 5}}}});
  EXPECT_EQ(invalid["code"], "INVALID_ARGUMENT");
  const std::string details = invalid["details"];
  EXPECT_NE(details.find("/interval_ms: must be an integer from"), std::string::npos) << details;
  EXPECT_NE(details.find("needs a selector"), std::string::npos) << details;

  EXPECT_EQ(admin(service, "RemoveTarget", {{"name", "db"}})["code"], "OK");
  const auto again = admin(service, "RemoveTarget", {{"name", "db"}});
  EXPECT_EQ(again["code"], "NOT_FOUND") << again.dump();
}

TEST(Api, ADeadlockIsListedWithItsProcessAndReadWhole) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  json incidents;
  ASSERT_TRUE(waitFor(
      [&] {
        incidents = call(service, service.unixTarget(), service.readerToken(), "ListIncidents",
                         {{"state", "INCIDENT_STATE_OPEN"}, {"pid", abba.pid()}});
        return incidents["code"] == "OK" && !incidents["response"]["incidents"].empty();
      },
      20s))
      << incidents.dump();
  const auto& listed = incidents["response"]["incidents"][0];
  EXPECT_EQ(listed["kind"], "INCIDENT_KIND_DEADLOCK");
  EXPECT_FALSE(listed.contains("chains"));  // the list is for finding; GetIncident has them

  const auto whole = call(service, service.tcpTarget(), service.readerToken(), "GetIncident",
                          {{"id", listed["id"]}});
  ASSERT_EQ(whole["code"], "OK") << whole.dump();
  EXPECT_FALSE(whole["response"]["chains"].empty());
  EXPECT_EQ(admin(service, "GetIncident", {{"id", 999999}})["code"], "NOT_FOUND");

  const auto processes =
      call(service, service.unixTarget(), service.readerToken(), "ListProcesses");
  ASSERT_EQ(processes["code"], "OK") << processes.dump();
  ASSERT_EQ(processes["response"]["processes"].size(), 1U) << processes.dump();
  const auto& p = processes["response"]["processes"][0];
  EXPECT_EQ(p["pid"], abba.pid());
  EXPECT_EQ(p["target"], "fixtures");
  EXPECT_EQ(p["state"], "deadlocked");
  EXPECT_GE(p["threads"].get<int>(), 3);

  const auto status = admin(service, "GetStatus");
  EXPECT_EQ(status["response"]["watched_processes"], 1);
  EXPECT_EQ(status["response"]["open_incidents"][0]["count"], "1");  // uint64: a JSON string

  const auto analysis = admin(service, "AnalyzeProcess", {{"pid", abba.pid()}});
  ASSERT_EQ(analysis["code"], "OK") << analysis.dump();
  EXPECT_EQ(analysis["response"]["deadlocks"].size(), 1U);
  EXPECT_FALSE(analysis["response"].contains("captures"));  // only when asked
  const auto captured = admin(service, "AnalyzeProcess", {{"pid", abba.pid()}, {"capture", true}});
  ASSERT_EQ(captured["code"], "OK") << captured.dump();
  ASSERT_EQ(captured["response"]["captures"].size(), 2U) << captured.dump();
  for (const auto& c : captured["response"]["captures"]) {
    EXPECT_EQ(c.value("captured", false), true) << c.dump();
    EXPECT_FALSE(c["registers"].empty());
  }
  const auto reader = call(service, service.unixTarget(), service.readerToken(), "AnalyzeProcess",
                           {{"pid", abba.pid()}});
  EXPECT_EQ(reader["code"], "PERMISSION_DENIED");
  const auto gone = admin(service, "AnalyzeProcess", {{"pid", 999999999}});
  EXPECT_EQ(gone["code"], "NOT_FOUND") << gone.dump();
}

TEST(Api, AnAnalysisWhoseCallerLeavesIsStoppedBeforeItCapturesAnything) {
  ApiService service;
  // Large enough that reading it takes far longer than the caller waits (0.5-0.7 s with its
  // capture on an idle machine); not a target.
  FixtureProcess big("idle-abba", "10000");
  const auto r = runCommand(
      {"/usr/bin/python3", WCTMON_API_CLIENT, WCTMON_PROTO_DIR, service.dir().path().string(),
       service.unixTarget(), service.adminToken(), "AnalyzeProcess",
       json{{"pid", big.pid()}, {"capture", true}}.dump(), "--connected", "--timeout=0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["code"], "DEADLINE_EXCEEDED") << r.out;
  const auto line =
      "on-demand analysis of pid " + std::to_string(big.pid()) + " stopped: its caller went away";
  EXPECT_TRUE(waitFor([&] { return readFile(service.log()).find(line) != std::string::npos; }, 10s))
      << readFile(service.log());
}

TEST(Api, CapturesGiveTheirMemoryBack) {
  // A capture unwinds the stacks with the target's debug information (with libc's separate debug
  // file installed, the unwinding's heap peaks at 16 MB); the allocator kept it in the arena of
  // each worker that captured, and the service grew for good (26 MB here, before the fix).
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  ASSERT_EQ(admin(service, "AnalyzeProcess", {{"pid", abba.pid()}})["code"], "OK");
  const auto before = residentBytesOf(service.pid(), "RssAnon");
  for (int i = 0; i < 6; ++i) {
    const auto captured =
        admin(service, "AnalyzeProcess", {{"pid", abba.pid()}, {"capture", true}});
    ASSERT_EQ(captured["code"], "OK") << captured.dump();
    ASSERT_EQ(captured["response"]["captures"].size(), 2U) << captured.dump();
    for (const auto& c : captured["response"]["captures"]) EXPECT_FALSE(c["frames"].empty());
  }
  const auto after = residentBytesOf(service.pid(), "RssAnon");
  EXPECT_LT(after, before + 12 * 1024 * 1024) << before << " bytes before, " << after << " after";
}

TEST(Api, PagesOfIncidentsAndBadRequestsGetTheirStatus) {
  ApiService service;
  const auto bad_token = admin(service, "ListIncidents", {{"page_token", "nonsense"}});
  EXPECT_EQ(bad_token["code"], "INVALID_ARGUMENT") << bad_token.dump();
  const auto negative = admin(service, "ListIncidents", {{"page_size", -1}});
  EXPECT_EQ(negative["code"], "INVALID_ARGUMENT") << negative.dump();
  // A valid Timestamp that nanoseconds since 1970 cannot hold (it wrapped into the past).
  const auto far = admin(service, "ListIncidents", {{"since", "9999-12-31T00:00:00Z"}});
  EXPECT_EQ(far["code"], "INVALID_ARGUMENT") << far.dump();
  EXPECT_NE(far.value("details", "").find("since"), std::string::npos) << far.dump();
  const auto empty = admin(service, "ListIncidents", {{"page_size", 5}});
  ASSERT_EQ(empty["code"], "OK") << empty.dump();
  EXPECT_FALSE(empty["response"].contains("next_page_token"));
  const auto reload = admin(service, "ReloadConfig");
  EXPECT_EQ(reload["code"], "OK") << reload.dump();
}

/// The next line of a watch client as JSON: an event, or the final {"code": ...}; null after
/// `timeout`.
json nextEvent(FixtureProcess& watcher, std::chrono::milliseconds timeout = 20s) {
  const auto line = watcher.nextLine(timeout);
  return line.empty() ? json() : json::parse(line);
}

/// Whether `event` is of `type` and about process `pid`.
bool isEvent(const json& event, const std::string& type, pid_t pid) {
  const auto processes = event.value("incident", json::object()).value("processes", json::array());
  return event.value("type", "") == type &&
         std::any_of(processes.begin(), processes.end(),
                     [&](const json& p) { return p.value("pid", 0) == pid; });
}

/// Events of `watcher` until one of `type` about process `pid` (skipping others).
json nextEventOf(FixtureProcess& watcher, const std::string& type, pid_t pid) {
  for (;;) {
    auto event = nextEvent(watcher);
    if (event.is_null() || event.contains("code") || isEvent(event, type, pid)) return event;
  }
}

/// Events of `watcher` until one of `type` about each of `pids`, in any order; the pids without.
std::set<pid_t> awaitEvents(FixtureProcess& watcher, const std::string& type,
                            std::set<pid_t> pids) {
  while (!pids.empty()) {
    const auto event = nextEvent(watcher);
    if (event.is_null() || event.contains("code")) break;
    std::erase_if(pids, [&](pid_t pid) { return isEvent(event, type, pid); });
  }
  return pids;
}

TEST(Api, AWatcherGetsTheOpenIncidentsThenEachChangeAsItHappensUntilTheServiceStops) {
  ApiService service;
  FixtureProcess before("mutex-abba", "", service.tag());
  ASSERT_TRUE(waitFor(
      [&] {
        return !admin(service, "ListIncidents",
                      {{"state", "INCIDENT_STATE_OPEN"}})["response"]["incidents"]
                    .empty();
      },
      20s));
  auto refused = watch(service, json::object(), "-");
  EXPECT_EQ(nextEvent(*refused)["code"], "UNAUTHENTICATED");

  auto watcher = watch(service);
  const auto existing = nextEvent(*watcher);
  EXPECT_EQ(existing["type"], "TYPE_EXISTING") << existing.dump();
  EXPECT_EQ(existing["incident"]["pid"], before.pid());
  EXPECT_EQ(admin(service, "GetStatus")["response"]["api_watchers"], 1);

  // A deadlock as it forms, with its chains, then its end.
  FixtureProcess during("mutex-abba", "", service.tag());
  const auto opened = nextEventOf(*watcher, "TYPE_OPENED", during.pid());
  ASSERT_EQ(opened["type"], "TYPE_OPENED") << opened.dump();
  EXPECT_EQ(opened["incident"]["kind"], "INCIDENT_KIND_DEADLOCK");
  EXPECT_FALSE(opened["incident"]["chains"].empty());
  const auto pid = during.pid();
  during.kill();
  const auto resolved = nextEventOf(*watcher, "TYPE_RESOLVED", pid);
  ASSERT_EQ(resolved["type"], "TYPE_RESOLVED") << resolved.dump();
  EXPECT_EQ(resolved["incident"]["id"], opened["incident"]["id"]);

  // The stream ends at once when the service stops, which stops in its usual time.
  const auto [took, status] = service.terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(took, 5s);
  const auto end = nextEvent(*watcher, 5s);
  EXPECT_EQ(end["code"], "UNAVAILABLE") << end.dump();
}

TEST(Api, AWatcherThatDoesNotReadIsCutOffWhileSamplingAndOtherWatchersGoOn) {
  // A queue that takes the bursts below (two deadlocks forming or ending in one sweep) from a
  // client that reads, and not the sixteen events held up by one that does not.
  ApiService service(R"("watch_queue": 4, )");
  // Grants the server one small HTTP/2 window and reads nothing until told to.
  const auto go_on = service.dir().path() / "slow-client-reads";
  auto slow = watch(service, {{"window", 1024}, {"pause_until", go_on.string()}});
  auto reader = watch(service);
  const auto samples_before =
      std::stoull(admin(service, "GetStatus")["response"].value("samples", "0"));
  std::vector<std::unique_ptr<FixtureProcess>> fixtures;
  for (int pair = 0; pair < 4; ++pair) {
    std::set<pid_t> pids;
    for (int i = 0; i < 2; ++i) {
      fixtures.push_back(std::make_unique<FixtureProcess>("mutex-abba", "", service.tag()));
      pids.insert(fixtures.back()->pid());
    }
    ASSERT_EQ(awaitEvents(*reader, "TYPE_OPENED", pids), std::set<pid_t>{});
  }
  for (std::size_t pair = 0; pair < fixtures.size(); pair += 2) {
    const std::set<pid_t> pids{fixtures[pair]->pid(), fixtures[pair + 1]->pid()};
    fixtures[pair]->kill();
    fixtures[pair + 1]->kill();
    ASSERT_EQ(awaitEvents(*reader, "TYPE_RESOLVED", pids), std::set<pid_t>{});
  }
  const auto status = admin(service, "GetStatus")["response"];
  EXPECT_GT(std::stoull(status.value("samples", "0")), samples_before);
  EXPECT_EQ(status.value("samples_overdue", "0"), "0");

  // What the slow client reads once it does: what was sent before it was cut off, then why.
  std::ofstream{go_on};
  json last;
  for (json e = nextEvent(*slow); !e.is_null(); e = nextEvent(*slow)) {
    last = e;
    if (e.contains("code")) break;
  }
  EXPECT_EQ(last["code"], "RESOURCE_EXHAUSTED") << last.dump();
  EXPECT_NE(last.value("details", "").find("api.watch_queue"), std::string::npos) << last.dump();
  EXPECT_EQ(admin(service, "GetStatus")["response"]["api_watchers"], 1);
}

}  // namespace
}  // namespace wctmon
