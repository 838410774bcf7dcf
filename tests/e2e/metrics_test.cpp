// The metrics of a real wctmond as Prometheus sees them: the text its endpoint serves, and a real
// Prometheus server (Debian's) that scrapes it with the shipped alerting rules and answers its
// query API once a fixture deadlocks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "support/api_service.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ApiService;
using testing::FixtureProcess;
using testing::freePort;
using testing::httpGet;
using testing::readFile;
using testing::runCommand;
using testing::waitFor;

/// Debian's Prometheus scraping `target` every second as job "wctmon", with the shipped rules,
/// evaluated every second; killed when destroyed.
class PrometheusServer {
 public:
  explicit PrometheusServer(const std::string& target) {
    std::ofstream(dir_ / "prometheus.yml")
        << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        << "rule_files: [\"" << WCTMON_RULES_FILE << "\"]\n"
        << "scrape_configs:\n"
        << "  - job_name: wctmon\n"
        << "    static_configs: [{targets: [\"" << target << "\"]}]\n";
    server_.emplace(std::vector<std::string>{"prometheus",
                                             "--config.file=" + (dir_ / "prometheus.yml").string(),
                                             "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
                                             "--web.listen-address=" + address_},
                    dir_ / "prometheus.log");
  }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  /// The result of an instant query (the "data"."result" array), or null when it failed.
  [[nodiscard]] json query(const std::string& promql) const {
    std::string encoded;
    for (const unsigned char c : promql) {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      encoded += std::isalnum(c) != 0 ? std::string(1, static_cast<char>(c)) : hex;
    }
    const auto body = httpGet("http://" + address_ + "/api/v1/query?query=" + encoded);
    if (body.empty()) return {};
    const auto j = json::parse(body);
    return j.value("status", "") == "success" ? j["data"]["result"] : json();
  }
  [[nodiscard]] json alerts() const {
    const auto body = httpGet("http://" + address_ + "/api/v1/alerts");
    return body.empty() ? json() : json::parse(body)["data"]["alerts"];
  }
  [[nodiscard]] std::string log() const { return readFile(dir_ / "prometheus.log"); }

 private:
  testing::TempDir dir_{"prometheus"};
  std::string address_ = "127.0.0.1:" + std::to_string(freePort());
  std::optional<testing::BackgroundProcess> server_;
};

TEST(Metrics, TheEndpointServesEveryFigureByPrometheusConventions) {
  ApiService service;
  ASSERT_FALSE(service.metricsAddress().empty()) << readFile(service.log());
  const auto text = httpGet("http://" + service.metricsAddress() + "/metrics");
  for (const char* line :
       {"# TYPE wctmon_incidents_open gauge", "wctmon_incidents_open{kind=\"deadlock\"} 0",
        "wctmon_incidents_open{kind=\"hang\"} 0", "# TYPE wctmon_incidents_total counter",
        "wctmon_incidents_total{kind=\"deadlock\"} 0", "# TYPE wctmon_samples_total counter",
        "# TYPE wctmon_samples_skipped_total counter",
        "# TYPE wctmon_sample_duration_seconds histogram",
        "wctmon_sample_duration_seconds_bucket{le=\"+Inf\"}",
        "# TYPE wctmon_watched_processes gauge", "# TYPE wctmon_watched_threads gauge",
        "wctmon_api_watchers 0", "wctmon_build_info{platform=\"linux\",version=\"",
        "wctmon_healthy 1", "wctmon_wait_chain_source_available 1"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // Nothing else is served there.
  EXPECT_EQ(httpGet("http://" + service.metricsAddress() + "/"), "");
}

TEST(Metrics, APrometheusServerSeesTheDeadlockAndTheShippedRuleFires) {
  ApiService service;
  ASSERT_FALSE(service.metricsAddress().empty()) << readFile(service.log());
  PrometheusServer prometheus(service.metricsAddress());
  FixtureProcess abba("mutex-abba", "", service.tag());

  json open;
  ASSERT_TRUE(waitFor(
      [&] {
        open = prometheus.query("wctmon_incidents_open{kind=\"deadlock\"}");
        return open.is_array() && open.size() == 1 && open[0]["value"][1] == "1";
      },
      60s))
      << open.dump() << "\n"
      << prometheus.log();
  EXPECT_EQ(open[0]["metric"]["job"], "wctmon");

  json alerts;
  ASSERT_TRUE(waitFor(
      [&] {
        alerts = prometheus.alerts();
        return alerts.is_array() && std::any_of(alerts.begin(), alerts.end(), [](const json& a) {
                 return a["labels"]["alertname"] == "WctmonDeadlock" && a["state"] == "firing";
               });
      },
      30s))
      << alerts.dump();
  const auto samples = prometheus.query("wctmon_samples_total");
  ASSERT_TRUE(samples.is_array() && samples.size() == 1) << samples.dump();
  EXPECT_GT(std::stod(samples[0]["value"][1].get<std::string>()), 0);
}

}  // namespace
}  // namespace wctmon
