// The HTTP alert sinks end to end: a real wctmond posting to Debian's Prometheus Alertmanager
// (the deadlock shows there with the incident's labels while it lasts, and its resolution ends
// it), and to a web hook that is down for the first 30 s (every alert arrives afterwards, in
// order, none lost).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace wctmon
