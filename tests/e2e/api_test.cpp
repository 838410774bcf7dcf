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

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FixtureProcess;
using testing::readFile;
using testing::runCommand;
using testing::waitFor;
using testing::wctmonPath;

/// `wctmon run` with its API on a Unix socket in a temporary directory and on 127.0.0.1 at a
/// port of the system's choosing, watching the fixtures started with its tag.
class ApiService {
 public:
  ApiService() {
    tag_ = "--tag=" + dir_.name();
    std::ofstream(dir_ / "wctmon.json")
        << R"({"state_dir": ")" << (dir_ / "state").string() << R"(", "api": {"listen": ["unix:)"
        << socket() << R"(", "127.0.0.1:0"]}, "sampling": {"interval_ms": 300},)"
        << R"( "alerts": {"sink": "none"}, "targets": [{"name": "fixtures", "cmdline": ")" << tag_
        << R"(", "hang_threshold_ms": 1000}]})";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, STDERR_FILENO);
      ::dup2(fd, STDOUT_FILENO);
      const std::string c = (dir_ / "wctmon.json").string();
      ::execl(wctmonPath(), wctmonPath(), "run", "--config", c.c_str(), nullptr);
      _exit(127);
    }
    waitFor([&] { return readFile(log()).find("service started") != std::string::npos; }, 20s);
    std::smatch m;
    const auto text = readFile(log());
    if (std::regex_search(text, m, std::regex(R"(API listening on .*127\.0\.0\.1:(\d+))"))) {
      tcp_ = "127.0.0.1:" + m[1].str();
    }
  }
  ~ApiService() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ApiService(const ApiService&) = delete;
  ApiService& operator=(const ApiService&) = delete;

  [[nodiscard]] std::string socket() const { return (dir_ / "api.sock").string(); }
  [[nodiscard]] std::string unixTarget() const { return "unix:" + socket(); }
  [[nodiscard]] const std::string& tcpTarget() const { return tcp_; }
  [[nodiscard]] std::string log() const { return (dir_ / "service.log").string(); }
  [[nodiscard]] std::string adminToken() const {
    return (dir_ / "state" / "api-admin.token").string();
  }
  [[nodiscard]] std::string readerToken() const {
    return (dir_ / "state" / "api-reader.token").string();
  }
  [[nodiscard]] const std::string& tag() const { return tag_; }

  /// One call through the Python client: {"code": ..., "response"/"details": ...}.
  [[nodiscard]] json call(const std::string& target, const std::string& token,
                          const std::string& method, const json& request = json::object()) const {
    const auto r = runCommand({"/usr/bin/python3", WCTMON_API_CLIENT, WCTMON_PROTO_DIR,
                               dir_.path().string(), target, token, method, request.dump()});
    if (r.exit_code != 0) throw std::runtime_error("api_client.py failed: " + r.err);
    return json::parse(r.out);
  }
  [[nodiscard]] json admin(const std::string& method, const json& request = json::object()) const {
    return call(unixTarget(), adminToken(), method, request);
  }

 private:
  testing::TempDir dir_{"api"};
  std::string tag_;
  std::string tcp_;
  pid_t pid_ = -1;
};

TEST(Api, StatusOverTheSocketAndLoopbackWithEitherTokenAndNothingWithout) {
  ApiService service;
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  for (const auto& target : {service.unixTarget(), service.tcpTarget()}) {
    SCOPED_TRACE(target);
    for (const auto& token : {service.adminToken(), service.readerToken()}) {
      const auto status = service.call(target, token, "GetStatus");
      ASSERT_EQ(status["code"], "OK") << status.dump();
      EXPECT_EQ(status["response"]["platform"], "linux");
      EXPECT_EQ(status["response"]["source"]["name"], "linux-proc");
      EXPECT_EQ(status["response"]["source"]["available"], true);
      EXPECT_EQ(status["response"]["healthy"], true);
    }
    const auto none = service.call(target, "-", "GetStatus");
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
      << R"({"state_dir": ")" << (dir / "state").string() << R"(", "api": {"listen": ["unix:)"
      << first.socket() << R"("]}, "alerts": {"sink": "none"}, "targets": []})";
  const auto second = runCommand({wctmonPath(), "run", "--config", (dir / "wctmon.json").string()});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("another service answers on the API socket " + first.socket()),
            std::string::npos)
      << second.err;
  EXPECT_EQ(first.call(first.unixTarget(), first.readerToken(), "GetStatus")["code"], "OK");
}

TEST(Api, HealthAndReflectionNeedNoToken) {
  ApiService service;
  const auto health = service.call(service.unixTarget(), "-", "health");
  EXPECT_EQ(health["response"]["status"], "SERVING") << health.dump();
  const auto reflection = service.call(service.unixTarget(), "-", "reflection");
  ASSERT_EQ(reflection["code"], "OK") << reflection.dump();
  EXPECT_EQ(reflection["response"]["services"],
            json::array({"wctmon.v1.Monitor", "grpc.health.v1.Health"}));
}

TEST(Api, TargetsAreAddedAndRemovedByTheAdminOnlyAndCheckedLikeTheConfigFile) {
  ApiService service;
  const json target = {{"target", {{"name", "db"}, {"exe", "postgres"}, {"interval_ms", 500}}}};
  const auto denied =
      service.call(service.unixTarget(), service.readerToken(), "AddTarget", target);
  EXPECT_EQ(denied["code"], "PERMISSION_DENIED") << denied.dump();

  const auto added = service.admin("AddTarget", target);
  ASSERT_EQ(added["code"], "OK") << added.dump();
  EXPECT_EQ(added["response"]["origin"], "TARGET_ORIGIN_RUNTIME");
  EXPECT_EQ(added["response"]["hang_threshold_ms"], 30000);  // the file's default

  const auto listed = service.call(service.unixTarget(), service.readerToken(), "ListTargets");
  ASSERT_EQ(listed["code"], "OK") << listed.dump();
  std::vector<std::string> names;
  for (const auto& t : listed["response"]["targets"]) {
    names.push_back(t["name"].get<std::string>() + "/" + t["origin"].get<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fixtures/TARGET_ORIGIN_CONFIG",
                                             "db/TARGET_ORIGIN_RUNTIME"}));

  const auto invalid =
      service.admin("AddTarget", {{"target", {{"name", "bad"}, {"interval_ms", 5}}}});
  EXPECT_EQ(invalid["code"], "INVALID_ARGUMENT");
  const std::string details = invalid["details"];
  EXPECT_NE(details.find("/interval_ms: must be an integer from"), std::string::npos) << details;
  EXPECT_NE(details.find("needs a selector"), std::string::npos) << details;

  EXPECT_EQ(service.admin("RemoveTarget", {{"name", "db"}})["code"], "OK");
  const auto again = service.admin("RemoveTarget", {{"name", "db"}});
  EXPECT_EQ(again["code"], "NOT_FOUND") << again.dump();
}

TEST(Api, ADeadlockIsListedWithItsProcessAndReadWhole) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  json incidents;
  ASSERT_TRUE(waitFor(
      [&] {
        incidents = service.call(service.unixTarget(), service.readerToken(), "ListIncidents",
                                 {{"state", "INCIDENT_STATE_OPEN"}, {"pid", abba.pid()}});
        return incidents["code"] == "OK" && !incidents["response"]["incidents"].empty();
      },
      20s))
      << incidents.dump();
  const auto& listed = incidents["response"]["incidents"][0];
  EXPECT_EQ(listed["kind"], "INCIDENT_KIND_DEADLOCK");
  EXPECT_FALSE(listed.contains("chains"));  // the list is for finding; GetIncident has them

  const auto whole = service.call(service.tcpTarget(), service.readerToken(), "GetIncident",
                                  {{"id", listed["id"]}});
  ASSERT_EQ(whole["code"], "OK") << whole.dump();
  EXPECT_FALSE(whole["response"]["chains"].empty());
  EXPECT_EQ(service.admin("GetIncident", {{"id", 999999}})["code"], "NOT_FOUND");

  const auto processes = service.call(service.unixTarget(), service.readerToken(), "ListProcesses");
  ASSERT_EQ(processes["code"], "OK") << processes.dump();
  ASSERT_EQ(processes["response"]["processes"].size(), 1U) << processes.dump();
  const auto& p = processes["response"]["processes"][0];
  EXPECT_EQ(p["pid"], abba.pid());
  EXPECT_EQ(p["target"], "fixtures");
  EXPECT_EQ(p["state"], "deadlocked");
  EXPECT_GE(p["threads"].get<int>(), 3);

  const auto status = service.admin("GetStatus");
  EXPECT_EQ(status["response"]["watched_processes"], 1);
  EXPECT_EQ(status["response"]["open_incidents"][0]["count"], "1");  // uint64: a JSON string

  const auto analysis = service.admin("AnalyzeProcess", {{"pid", abba.pid()}});
  ASSERT_EQ(analysis["code"], "OK") << analysis.dump();
  EXPECT_EQ(analysis["response"]["deadlocks"].size(), 1U);
  const auto reader = service.call(service.unixTarget(), service.readerToken(), "AnalyzeProcess",
                                   {{"pid", abba.pid()}});
  EXPECT_EQ(reader["code"], "PERMISSION_DENIED");
  const auto gone = service.admin("AnalyzeProcess", {{"pid", 999999999}});
  EXPECT_EQ(gone["code"], "NOT_FOUND") << gone.dump();
}

TEST(Api, PagesOfIncidentsAndBadRequestsGetTheirStatus) {
  ApiService service;
  const auto bad_token = service.admin("ListIncidents", {{"page_token", "nonsense"}});
  EXPECT_EQ(bad_token["code"], "INVALID_ARGUMENT") << bad_token.dump();
  const auto negative = service.admin("ListIncidents", {{"page_size", -1}});
  EXPECT_EQ(negative["code"], "INVALID_ARGUMENT") << negative.dump();
  const auto empty = service.admin("ListIncidents", {{"page_size", 5}});
  ASSERT_EQ(empty["code"], "OK") << empty.dump();
  EXPECT_FALSE(empty["response"].contains("next_page_token"));
  const auto reload = service.admin("ReloadConfig");
  EXPECT_EQ(reload["code"], "OK") << reload.dump();
}

}  // namespace
}  // namespace wctmon
