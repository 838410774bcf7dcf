// The HTTP alert sinks end to end: a real wctmond posting to Debian's Prometheus Alertmanager
// (the deadlock shows there with the incident's labels while it lasts, and its resolution ends
// it), and to a web hook that is down for the first 30 s (every alert arrives afterwards, in
// order, none lost).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/api_service.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ApiService;
using testing::BackgroundProcess;
using testing::FixtureProcess;
using testing::freePort;
using testing::httpGet;
using testing::readFile;
using testing::waitFor;

/// Debian's prometheus-alertmanager on a loopback port, alone (no cluster), routing every alert
/// to a receiver that sends nothing; killed when destroyed.
class Alertmanager {
 public:
  Alertmanager() {
    std::ofstream(dir_ / "alertmanager.yml")
        << "route: {receiver: keep, group_wait: 1s}\nreceivers: [{name: keep}]\n";
    server_.emplace(
        std::vector<std::string>{"prometheus-alertmanager",
                                 "--config.file=" + (dir_ / "alertmanager.yml").string(),
                                 "--storage.path=" + (dir_ / "data").string(),
                                 "--web.listen-address=" + address_, "--cluster.listen-address="},
        dir_ / "alertmanager.log");
    if (!waitFor([&] { return !httpGet("http://" + address_ + "/-/ready").empty(); }, 30s)) {
      throw std::runtime_error("Alertmanager did not start: " + log());
    }
  }

  [[nodiscard]] const std::string& address() const { return address_; }
  /// The alerts it holds that have not ended (API v2).
  [[nodiscard]] json alerts() const {
    const auto body = httpGet("http://" + address_ + "/api/v2/alerts");
    return body.empty() ? json::array() : json::parse(body);
  }
  [[nodiscard]] std::string log() const { return readFile(dir_ / "alertmanager.log"); }

 private:
  testing::TempDir dir_{"alertmanager"};
  std::string address_ = "127.0.0.1:" + std::to_string(freePort());
  std::optional<BackgroundProcess> server_;
};

/// The value of the sample `series` (name and labels, as the endpoint prints them), or -1.
double metric(const ApiService& service, const std::string& series) {
  std::istringstream text(httpGet("http://" + service.metricsAddress() + "/metrics"));
  for (std::string line; std::getline(text, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

std::string sinks(const std::string& list) { return R"("alerts": {"sinks": )" + list + "}, "; }

TEST(AlertReceivers, AlertmanagerShowsADeadlockWithItsIncidentsLabelsUntilItResolves) {
  Alertmanager am;
  ApiService service(
      "", sinks(R"([{"type": "alertmanager", "url": "http://)" + am.address() + R"("}])"));
  EXPECT_NE(
      readFile(service.log())
          .find("alerts go to Alertmanager at http://" + am.address() + " (sink alertmanager)"),
      std::string::npos)
      << readFile(service.log());
  auto abba = std::make_unique<FixtureProcess>("mutex-abba", "", service.tag());
  const auto pid = std::to_string(abba->pid());
  const auto ours = [&](const json& a) {
    return a["labels"].value("alertname", "") == "WctmonDeadlock" &&
           a["labels"].value("pid", "") == pid;
  };

  json found;
  ASSERT_TRUE(waitFor(
      [&] {
        for (const auto& a : am.alerts()) {
          if (ours(a)) found = a;
        }
        return !found.is_null();
      },
      60s))
      << readFile(service.log()) << am.log();
  const auto& labels = found["labels"];
  EXPECT_EQ(labels.value("severity", ""), "critical") << found.dump();
  EXPECT_EQ(labels.value("kind", ""), "deadlock") << found.dump();
  EXPECT_EQ(labels.value("target", ""), "fixtures") << found.dump();
  EXPECT_EQ(labels.value("process", ""), "wctmon-fixture") << found.dump();
  EXPECT_NE(labels.value("incident_id", ""), "") << found.dump();
  EXPECT_NE(labels.value("host", ""), "") << found.dump();
  EXPECT_NE(found["annotations"].value("summary", "").find("deadlock"), std::string::npos)
      << found.dump();
  EXPECT_EQ(found["status"].value("state", ""), "active") << found.dump();

  // Restarted, the service takes the incident up again at once: Alertmanager hears of it
  // again (not only at the next minute's refresh), or it would end the alert 4 minutes on.
  const auto updated = found.value("updatedAt", "");
  service.terminate();
  service.start();
  EXPECT_TRUE(waitFor(
      [&] {
        for (const auto& a : am.alerts()) {
          if (ours(a) && a.value("updatedAt", "") > updated) return true;
        }
        return false;
      },
      20s))
      << am.alerts().dump() << readFile(service.log());

  abba.reset();  // killed: the incident resolves, and its alert ends
  EXPECT_TRUE(waitFor(
      [&] {
        const auto all = am.alerts();
        return std::none_of(all.begin(), all.end(), ours);
      },
      60s))
      << am.alerts().dump();
  EXPECT_EQ(metric(service, R"(wctmon_alerts_failed_total{sink="alertmanager"})"), 0);
  EXPECT_GE(metric(service, R"(wctmon_alerts_delivered_total{sink="alertmanager"})"), 2);
}

TEST(AlertReceivers, AWebHookDownForItsFirstThirtySecondsGetsEveryAlertAfterwardsInOrder) {
  testing::TempDir dir("webhook");
  std::ofstream(dir / "token") << "hook-token\n";
  const int port = freePort();
  const auto start = std::chrono::steady_clock::now();
  ApiService service(
      "", sinks(R"([{"type": "webhook", "url": "http://127.0.0.1:)" + std::to_string(port) +
                R"(/wctmon", "token_file": ")" + (dir / "token").string() + R"("}])"));
  const std::string deadlock = R"(wctmon_incidents_open{kind="deadlock"})";
  auto abba = std::make_unique<FixtureProcess>("mutex-abba", "", service.tag());
  const int pid = abba->pid();
  ASSERT_TRUE(waitFor([&] { return metric(service, deadlock) == 1; }, 60s))
      << readFile(service.log());
  abba.reset();
  ASSERT_TRUE(waitFor([&] { return metric(service, deadlock) == 0; }, 60s))
      << readFile(service.log());
  const std::string retried = R"(wctmon_alerts_retried_total{sink="webhook"})";
  EXPECT_GT(metric(service, retried), 0);
  EXPECT_EQ(metric(service, R"(wctmon_alerts_delivered_total{sink="webhook"})"), 0);

  std::this_thread::sleep_until(start + 30s);
  BackgroundProcess receiver({"/usr/bin/python3", WCTMON_WEBHOOK_RECEIVER, std::to_string(port),
                              "hook-token", (dir / "received").string()},
                             dir / "receiver.log");
  std::vector<json> received;
  const auto events = [&] {
    std::vector<std::string> out;
    for (const auto& r : received) out.push_back(r.value("event", ""));
    return out;
  };
  // The sink's waits double up to 30 s: the first alert goes within a minute.
  ASSERT_TRUE(waitFor(
      [&] {
        received.clear();
        std::istringstream lines(readFile(dir / "received"));
        for (std::string line; std::getline(lines, line);) received.push_back(json::parse(line));
        return received.size() >= 3;
      },
      90s))
      << readFile(service.log()) << readFile(dir / "receiver.log");
  EXPECT_EQ(events(), (std::vector<std::string>{"service_started", "deadlock_detected",
                                                "incident_resolved"}));
  EXPECT_EQ(received[1]["incident"]["pid"], pid) << received[1].dump();
  EXPECT_EQ(received[2]["incident"]["id"], received[1]["incident"]["id"]);
  EXPECT_EQ(received[2]["incident"]["state"], "INCIDENT_STATE_RESOLVED");
  EXPECT_EQ(metric(service, R"(wctmon_alerts_delivered_total{sink="webhook"})"), 3);
  EXPECT_EQ(metric(service, R"(wctmon_alerts_failed_total{sink="webhook"})"), 0);
  EXPECT_EQ(metric(service, R"(wctmon_alerts_dropped_total{sink="webhook"})"), 0);
}

/// Whether something listens on 127.0.0.1:`port`.
bool listening(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return connected;
}

/// A self-signed certificate for `name` (as its subject alternative name) in `dir`:
/// NAME.pem and NAME.key.
void selfSigned(const testing::TempDir& dir, const std::string& name, const std::string& san) {
  const auto r = testing::runCommand(
      {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
       "/CN=" + name, "-addext", "subjectAltName=" + san, "-keyout",
       (dir / (name + ".key")).string(), "-out", (dir / (name + ".pem")).string()});
  if (r.exit_code != 0) throw std::runtime_error("openssl req: " + r.err);
}

TEST(AlertReceivers, AnHttpsWebHookIsTrustedThroughItsCaFileAndOnlyForItsOwnName) {
  testing::TempDir dir("webhook-tls");
  selfSigned(dir, "receiver", "IP:127.0.0.1");
  selfSigned(dir, "stranger", "DNS:elsewhere.example");
  std::ofstream(dir / "token") << "hook-token\n";
  const int port = freePort();
  const int wrong_port = freePort();
  BackgroundProcess receiver({"/usr/bin/python3", WCTMON_WEBHOOK_RECEIVER, std::to_string(port),
                              "hook-token", (dir / "received").string(),
                              (dir / "receiver.pem").string(), (dir / "receiver.key").string()},
                             dir / "receiver.log");
  // A receiver whose certificate names another host: refused although its CA is given.
  BackgroundProcess stranger(
      {"/usr/bin/python3", WCTMON_WEBHOOK_RECEIVER, std::to_string(wrong_port), "hook-token",
       (dir / "stranger-received").string(), (dir / "stranger.pem").string(),
       (dir / "stranger.key").string()},
      dir / "stranger.log");
  ASSERT_TRUE(waitFor([&] { return listening(port) && listening(wrong_port); }, 10s));
  const auto hook = [&](const std::string& name, int at, const std::string& ca) {
    return R"({"type": "webhook", "name": ")" + name + R"(", "url": "https://127.0.0.1:)" +
           std::to_string(at) + R"(/wctmon", "token_file": ")" + (dir / "token").string() +
           R"(", "ca_file": ")" + (dir / ca).string() + R"(", "retry_for_ms": 0})";
  };
  ApiService service("", sinks("[" + hook("trusted", port, "receiver.pem") + ", " +
                               hook("strange", wrong_port, "stranger.pem") + "]"));
  ASSERT_TRUE(waitFor(
      [&] { return readFile(dir / "received").find("service_started") != std::string::npos; }, 30s))
      << readFile(service.log()) << readFile(dir / "receiver.log");
  ASSERT_TRUE(waitFor(
      [&] { return metric(service, R"(wctmon_alerts_failed_total{sink="strange"})") == 1; }, 30s))
      << readFile(service.log());
  EXPECT_EQ(readFile(dir / "stranger-received"), "");
  EXPECT_EQ(metric(service, R"(wctmon_alerts_delivered_total{sink="trusted"})"), 1);
  // Why, as wctctl status says it.
  const auto status = testing::runCommand({WCTMON_WCTCTL_PATH, "--server", service.unixTarget(),
                                           "--token-file", service.readerToken(), "status"});
  EXPECT_NE(status.out.find("certificate verify failed"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace wctmon
