// The metrics of a real wctmond as Prometheus sees them: the text its endpoint serves, and a real
// Prometheus server (Debian's) that scrapes it with the shipped alerting rules and answers its
// query API once a fixture deadlocks; the shipped Grafana dashboard, its every query asked of
// that Prometheus.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

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
using testing::runWctmon;
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
    return api("query?query=" + encoded(promql));
  }
  /// The result of a range query over the last `seconds`, a point a second (the "data"."result"
  /// array of matrices), or null when it failed.
  [[nodiscard]] json queryRange(const std::string& promql, int seconds) const {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    return api("query_range?query=" + encoded(promql) + "&start=" + std::to_string(now - seconds) +
               "&end=" + std::to_string(now) + "&step=1");
  }
  /// The series that `selector` selects now (their label sets), or null when it failed.
  [[nodiscard]] json series(const std::string& selector) const {
    return api("series?match[]=" + encoded(selector));
  }
  [[nodiscard]] json alerts() const {
    const auto body = httpGet("http://" + address_ + "/api/v1/alerts");
    return body.empty() ? json() : json::parse(body)["data"]["alerts"];
  }
  [[nodiscard]] std::string log() const { return readFile(dir_ / "prometheus.log"); }

 private:
  static std::string encoded(const std::string& text) {
    std::string out;
    for (const unsigned char c : text) {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += std::isalnum(c) != 0 ? std::string(1, static_cast<char>(c)) : hex;
    }
    return out;
  }
  /// GET /api/v1/`call`: its "data", or null when it failed.
  [[nodiscard]] json api(const std::string& call) const {
    const auto body = httpGet("http://" + address_ + "/api/v1/" + call);
    if (body.empty()) return {};
    const auto j = json::parse(body);
    return j.value("status", "") == "success"
               ? (j["data"].is_object() && j["data"].contains("result") ? j["data"]["result"]
                                                                        : j["data"])
               : json();
  }

  testing::TempDir dir_{"prometheus"};
  std::string address_ = "127.0.0.1:" + std::to_string(freePort());
  std::optional<testing::BackgroundProcess> server_;
};

/// A loopback TCP port that accepts connections (the kernel's backlog does): what a tcp probe
/// passes on.
class TcpListener {
 public:
  TcpListener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(fd_, 4096) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(address.sin_port);
  }
  ~TcpListener() { ::close(fd_); }
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  [[nodiscard]] int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
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
        "wctmon_healthy 1", "wctmon_wait_chain_source_available 1",
        // Every target and kind, zeros included; the oldest's start only where one is open.
        "# TYPE wctmon_target_incidents_open gauge",
        "wctmon_target_incidents_open{target=\"fixtures\",kind=\"deadlock\"} 0",
        "wctmon_target_incidents_open{target=\"fixtures\",kind=\"window-hung\"} 0",
        "# TYPE wctmon_target_oldest_incident_start_time_seconds gauge",
        "# TYPE wctmon_target_watched_processes gauge",
        "wctmon_target_watched_processes{target=\"fixtures\"} 0",
        // The standard figures of the process, as Prometheus' client libraries name them.
        "# TYPE process_cpu_seconds_total counter", "# TYPE process_resident_memory_bytes gauge",
        "# TYPE process_virtual_memory_bytes gauge", "# TYPE process_start_time_seconds gauge",
        "# TYPE process_open_fds gauge", "# TYPE process_max_fds gauge",
        "# TYPE process_threads gauge"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("wctmon_target_oldest_incident_start_time_seconds{"), std::string::npos)
      << text;
  // Only wctmon's families and the process's: no exposer_*, and no figure that is not a number.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(line.starts_with("wctmon_") || line.starts_with("process_")) << line;
    EXPECT_EQ(line.find("Nan"), std::string::npos) << line;
  }
  // The figures of the service's own process, not of another.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\nprocess_threads (\d+))")));
  EXPECT_GE(std::stoi(m[1].str()), 3) << "the service runs a scheduler, workers and listeners";
  ASSERT_TRUE(
      std::regex_search(text, m, std::regex(R"(\nprocess_start_time_seconds ([0-9.e+]+))")));
  const auto now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(std::stod(m[1].str()), now - 60) << "started with this test";
  EXPECT_LE(std::stod(m[1].str()), now + 1);
  ASSERT_TRUE(
      std::regex_search(text, m, std::regex(R"(\nprocess_resident_memory_bytes ([0-9.e+]+))")));
  const auto resident = std::stod(m[1].str());
  EXPECT_NEAR(resident, static_cast<double>(testing::residentBytesOf(service.pid())), resident / 2);
  // Nothing else is served there.
  EXPECT_EQ(httpGet("http://" + service.metricsAddress() + "/"), "");
}

/// `n` connections to `address` ("host:port") that send nothing.
std::vector<int> idleConnections(const std::string& address, int n) {
  const auto colon = address.rfind(':');
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr);
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
    out.push_back(fd);
  }
  return out;
}

// Anyone who can reach the endpoint can connect: with one worker, 2 idle connections failed
// every scrape. Connections beyond the workers wait; one that sends nothing is closed.
TEST(Metrics, IdleConnectionsBeyondItsWorkersDelayAScrapeByNoMoreThanTheirReadDeadline) {
  ApiService service;
  ASSERT_FALSE(service.metricsAddress().empty()) << readFile(service.log());
  const auto idle = idleConnections(service.metricsAddress(), 12);
  for (int scrape = 0; scrape < 5; ++scrape) {
    // Prometheus gives a scrape 10 s by default.
    EXPECT_NE(httpGet("http://" + service.metricsAddress() + "/metrics", 10)
                  .find("# TYPE wctmon_incidents_open gauge"),
              std::string::npos)
        << "scrape " << scrape;
  }
  for (const int fd : idle) ::close(fd);
}

TEST(Metrics, AnAddressInUseIsRefusedAtStartNamingIt) {
  const TcpListener taken;
  testing::TempDir dir("metrics-taken");
  const auto address = "127.0.0.1:" + std::to_string(taken.port());
  std::ofstream(dir / "wctmon.json")
      << R"({"state_dir": ")" << (dir / "state").string() << R"(", "metrics": {"listen": ")"
      << address << R"("}, "api": {"enabled": false}, "alerts": {"sinks": []}, "targets": []})";
  const auto run = runWctmon({"run", "--config", (dir / "wctmon.json").string()});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE((run.out + run.err).find("cannot serve metrics at " + address + " (metrics.listen)"),
            std::string::npos)
      << run.out << run.err;
}

TEST(Metrics, APrometheusServerSeesTheDeadlockAndTheShippedRuleFires) {
  ApiService service;
  ASSERT_FALSE(service.metricsAddress().empty()) << readFile(service.log());
  PrometheusServer prometheus(service.metricsAddress());
  const auto started =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
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
  // The same by target, with when it opened and what the target watches.
  const auto by_target =
      prometheus.query("wctmon_target_incidents_open{target=\"fixtures\",kind=\"deadlock\"}");
  ASSERT_TRUE(by_target.is_array() && by_target.size() == 1) << by_target.dump();
  EXPECT_EQ(by_target[0]["value"][1], "1");
  const auto since = prometheus.query("wctmon_target_oldest_incident_start_time_seconds");
  ASSERT_TRUE(since.is_array() && since.size() == 1) << since.dump();
  EXPECT_EQ(since[0]["metric"]["target"], "fixtures");
  EXPECT_EQ(since[0]["metric"]["kind"], "deadlock");
  EXPECT_NEAR(std::stod(since[0]["value"][1].get<std::string>()), started, 60);
  const auto watched = prometheus.query("wctmon_target_watched_processes{target=\"fixtures\"}");
  ASSERT_TRUE(watched.is_array() && watched.size() == 1) << watched.dump();
  EXPECT_EQ(watched[0]["value"][1], "1");

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

/// The shipped Grafana dashboard.
json dashboard() { return json::parse(readFile(WCTMON_DASHBOARD_FILE)); }

/// Every query of the dashboard's panels: the panel's title, the query, and whether Grafana asks
/// it as an instant query.
struct PanelQuery {
  std::string panel;
  std::string expr;
  bool instant = false;
};
std::vector<PanelQuery> panelQueries(const json& d) {
  std::vector<PanelQuery> out;
  for (const auto& panel : d.at("panels")) {
    for (const auto& target : panel.value("targets", json::array())) {
      out.push_back(
          {panel.value("title", ""), target.value("expr", ""), target.value("instant", false)});
    }
  }
  return out;
}

/// A query as Grafana sends it, its variables replaced: `values` by name; the rest "all" (.*).
std::string substituted(std::string expr, const std::map<std::string, std::string>& values) {
  // Grafana's own: the rate interval of a one-second scrape, four scrapes at least.
  expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "30s");
  std::string out;
  const std::regex variable(R"(\$\{?(\w+)\}?)");
  auto last = expr.cbegin();
  for (std::sregex_iterator it(expr.begin(), expr.end(), variable), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    const auto found = values.find((*it)[1].str());
    out += found != values.end() ? found->second : ".*";
    last = (*it)[0].second;
  }
  out.append(last, expr.cend());
  return out;
}

TEST(Dashboard, TheShippedDashboardIsAGrafanaDashboardOnAChosenPrometheus) {
  const auto d = dashboard();
  EXPECT_FALSE(d.value("title", "").empty());
  EXPECT_FALSE(d.value("uid", "").empty());
  ASSERT_TRUE(d.contains("schemaVersion") && d["schemaVersion"].is_number_integer());
  EXPECT_GE(d["schemaVersion"].get<int>(), 36);  // Grafana 9.x and later
  // The data source is a variable: the dashboard imports onto any Prometheus.
  std::set<std::string> variables;
  bool datasource_variable = false;
  for (const auto& v : d.at("templating").at("list")) {
    variables.insert(v.at("name").get<std::string>());
    if (v.value("type", "") == "datasource") {
      datasource_variable = v.value("query", "") == "prometheus" && v["name"] == "datasource";
    } else {
      EXPECT_EQ(v.at("datasource").at("uid"), "${datasource}") << v.dump();
    }
  }
  EXPECT_TRUE(datasource_variable) << d["templating"].dump();

  const std::set<std::string> kinds{"row", "stat", "timeseries", "table"};
  std::set<int> ids;
  struct Box {
    int x, y, w, h;
  };
  std::vector<std::pair<std::string, Box>> boxes;
  for (const auto& panel : d.at("panels")) {
    const auto title = panel.value("title", "");
    EXPECT_FALSE(title.empty()) << panel.dump();
    EXPECT_TRUE(kinds.contains(panel.value("type", ""))) << title;
    EXPECT_TRUE(ids.insert(panel.at("id").get<int>()).second) << "id used twice: " << title;
    const auto& g = panel.at("gridPos");
    const Box box{g.at("x").get<int>(), g.at("y").get<int>(), g.at("w").get<int>(),
                  g.at("h").get<int>()};
    EXPECT_TRUE(box.x >= 0 && box.w > 0 && box.x + box.w <= 24 && box.y >= 0 && box.h > 0) << title;
    for (const auto& [other, b] : boxes) {
      const bool apart =
          box.x + box.w <= b.x || b.x + b.w <= box.x || box.y + box.h <= b.y || b.y + b.h <= box.y;
      EXPECT_TRUE(apart) << title << " overlaps " << other;
    }
    boxes.emplace_back(title, box);
    if (panel["type"] == "row") continue;
    EXPECT_EQ(panel.at("datasource").at("uid"), "${datasource}") << title;
    const auto& targets = panel.at("targets");
    ASSERT_FALSE(targets.empty()) << title;
    std::set<std::string> refs;
    for (const auto& target : targets) {
      EXPECT_EQ(target.at("datasource").at("uid"), "${datasource}") << title;
      EXPECT_TRUE(refs.insert(target.at("refId").get<std::string>()).second) << title;
      const auto expr = target.at("expr").get<std::string>();
      EXPECT_FALSE(expr.empty()) << title;
      // Every variable a query uses is the dashboard's or Grafana's own.
      const std::regex variable(R"(\$\{?(\w+)\}?)");
      for (std::sregex_iterator it(expr.begin(), expr.end(), variable), end; it != end; ++it) {
        const auto name = (*it)[1].str();
        EXPECT_TRUE(variables.contains(name) || name == "__rate_interval")
            << name << " in " << expr;
      }
    }
  }
  EXPECT_GE(panelQueries(d).size(), 20U);
}

TEST(Dashboard, EveryPanelQueryAndVariableAnswersFromAPrometheusScrapingAServiceWithADeadlock) {
  // Everything a panel shows exists: a deadlock open, a probed target, an alert sink (a web hook
  // nobody answers, so its deliveries fail: the rule for failing delivery fires too).
  TcpListener probed;
  ApiService service(
      "",
      R"("alerts": {"sinks": [{"type": "webhook", "name": "hooks", "url": "http://127.0.0.1:)" +
          std::to_string(freePort()) + R"(/", "retry_for_ms": 0}]}, )",
      R"("probe": {"type": "tcp", "address": "127.0.0.1:)" + std::to_string(probed.port()) +
          R"(", "interval_ms": 500, "timeout_ms": 400}, )");
  ASSERT_FALSE(service.metricsAddress().empty()) << readFile(service.log());
  PrometheusServer prometheus(service.metricsAddress());
  // Scraped before the deadlock: a counter's first sample is no increase, and the failed
  // delivery of the deadlock's alert must be one.
  json up;
  ASSERT_TRUE(waitFor(
      [&] {
        up = prometheus.query("wctmon_alerts_failed_total{sink=\"hooks\"}");
        return up.is_array() && !up.empty();
      },
      30s))
      << up.dump() << prometheus.log();
  FixtureProcess abba("mutex-abba", "", service.tag());

  json found;
  ASSERT_TRUE(waitFor(
      [&] {
        found = prometheus.query(
            "wctmon_target_oldest_incident_start_time_seconds and on() wctmon_probe_up == 1");
        return found.is_array() && !found.empty();
      },
      60s))
      << found.dump() << "\n"
      << readFile(service.log()) << prometheus.log();
  json alerts;
  ASSERT_TRUE(waitFor(
      [&] {
        alerts = prometheus.alerts();
        return alerts.is_array() && std::any_of(alerts.begin(), alerts.end(), [](const json& a) {
                 return a["labels"]["alertname"] == "WctmonAlertDeliveryFailing" &&
                        a["labels"]["sink"] == "hooks" && a["state"] == "firing";
               });
      },
      30s))
      << alerts.dump() << "\n"
      << readFile(service.log());

  // The variables: each query's values, the scrape's among them.
  const std::map<std::string, std::string> chosen{{"job", "wctmon"}};
  const std::map<std::string, std::string> expected{
      {"job", "wctmon"}, {"instance", service.metricsAddress()}, {"target", "fixtures"}};
  const auto d = dashboard();
  for (const auto& v : d.at("templating").at("list")) {
    if (v.value("type", "") != "query") continue;
    const auto query = v.at("query").get<std::string>();
    std::smatch m;
    ASSERT_TRUE(std::regex_match(query, m, std::regex(R"(label_values\((.+), *(\w+)\))"))) << query;
    const auto series = prometheus.series(substituted(m[1].str(), chosen));
    std::set<std::string> values;
    for (const auto& labels : series) values.insert(labels.value(m[2].str(), ""));
    EXPECT_TRUE(values.contains(expected.at(v.at("name").get<std::string>())))
        << query << ": " << series.dump();
  }

  // Every query of every panel returns data that is a number, as Grafana asks it.
  for (const auto& q : panelQueries(d)) {
    const auto promql = substituted(q.expr, chosen);
    const auto result = q.instant ? prometheus.query(promql) : prometheus.queryRange(promql, 30);
    ASSERT_TRUE(result.is_array()) << q.panel << ": " << promql << " failed";
    bool number = false;
    for (const auto& series : result) {
      const auto values = q.instant ? json::array({series["value"]}) : series["values"];
      for (const auto& value : values) {
        number = number || !std::isnan(std::stod(value[1].get<std::string>()));
      }
    }
    EXPECT_TRUE(number) << q.panel << ": " << promql << " returns no data: " << result.dump();
  }
}

}  // namespace
}  // namespace wctmon
