// The key table of reloads: every key of the configuration is in it, once, and a reload keeps
// the running value of each key that needs a restart.
#include "app/config_keys.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace wctmon::app {
namespace {

using nlohmann::json;

/// Converts to anything: counts the members of an aggregate by how many initialisers it takes.
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT(google-explicit-constructor): declared only, never called
};

template <typename T, typename... Fields>
constexpr std::size_t fieldCount() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; }) {
    return fieldCount<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

// A field added to Config (or one of its groups) fails here first: add its key to the table in
// service/app/config_keys.cpp (live or restart), to the schema and the README, then count it.
static_assert(fieldCount<Config>() == 11, "state_dir, 9 groups, targets");
static_assert(fieldCount<Config::Metrics>() == 2);
static_assert(fieldCount<Config::Sampling>() == 4);
static_assert(fieldCount<Config::Detection>() == 4);
static_assert(fieldCount<Config::Services>() == 3);
static_assert(fieldCount<Config::ServiceSelection>() == 2);
static_assert(fieldCount<Config::Capture>() == 6);
static_assert(fieldCount<Config::Retention>() == 2);
static_assert(fieldCount<Config::Alerts>() == 3);
static_assert(fieldCount<Config::Log>() == 6);
static_assert(fieldCount<Config::Api>() == 9);

json schema() {
  std::ifstream in(std::string(WCTMON_SOURCE_DIR) + "/config/wctmon.schema.json");
  return json::parse(in);
}

/// Every leaf key of the schema, dotted ("sampling.threads"); an array (targets) is one key. A
/// deprecated key (alerts.sink) is another form of one of them.
void leafKeys(const json& node, const std::string& prefix, std::map<std::string, json>& out) {
  for (const auto& [name, child] : node.at("properties").items()) {
    if (child.value("deprecated", false)) continue;
    const auto key = prefix.empty() ? name : prefix + "." + name;
    if (child.value("type", "") == "object" && child.contains("properties")) {
      leafKeys(child, key, out);
    } else {
      out[key] = child;
    }
  }
}

std::map<std::string, json> schemaKeys() {
  std::map<std::string, json> out;
  leafKeys(schema(), "", out);
  return out;
}

/// A valid value of `node` other than its default.
json otherValue(const json& node) {
  const json fallback = node.value("default", json());
  // A key of several forms and no one type (services.watch): its last example.
  if (!node.contains("type") && node.contains("examples")) return node.at("examples").back();
  if (node.contains("enum")) {
    for (const auto& v : node["enum"]) {
      if (v != fallback) return v;
    }
  }
  const auto type = node.value("type", "");
  if (type == "boolean") return !fallback.get<bool>();
  if (type == "integer") {
    const auto min = node.value("minimum", std::int64_t{0});
    return fallback.is_number() && fallback.get<std::int64_t>() == min ? min + 1 : min;
  }
  if (type == "string") {
    // A string with a pattern and examples (metrics.listen): its last example.
    if (node.contains("examples")) return node.at("examples").back();
    return node.value("pattern", "") == "^/" ? "/tmp/elsewhere" : "other";
  }
  // An array whose items take several forms (alerts.sinks): its last example.
  if (type == "array" && node.contains("examples")) return node.at("examples").back();
  if (type == "array") {
    const auto& items = node.at("items");
    // Strings (api.listen): the schema's last example, which no default holds.
    if (items.value("type", "") == "string") return json::array({items.at("examples").back()});
    if (items.contains("enum")) {
      for (const auto& v : items["enum"]) {
        if (!fallback.is_array() ||
            std::find(fallback.begin(), fallback.end(), v) == fallback.end())
          return json::array({v});
      }
    }
    // An array of objects (targets): one, with the first selector the schema requires.
    const auto required = items.at("anyOf").at(0).at("required").at(0).get<std::string>();
    return json::array({json{{required, otherValue(items.at("properties").at(required))}}});
  }
  throw std::runtime_error("no other value for " + node.dump());
}

/// The configuration with `key` (dotted) set to `value`, everything else by default.
Config configWith(const std::string& key, const json& value) {
  json j = json::object();
  json* at = &j;
  std::istringstream parts(key);
  std::vector<std::string> names;
  for (std::string part; std::getline(parts, part, '.');) names.push_back(part);
  for (std::size_t i = 0; i + 1 < names.size(); ++i) at = &(*at)[names[i]];
  (*at)[names.back()] = value;
  auto parsed = parseConfig(j.dump());
  if (!parsed) {
    throw std::runtime_error(j.dump() + ": " + parsed.error().front().toString());
  }
  return *parsed;
}

Config defaults() { return *parseConfig("{}"); }

std::vector<std::string> names(const std::vector<const ConfigKey*>& keys) {
  std::vector<std::string> out;
  for (const auto* k : keys) out.emplace_back(k->name);
  return out;
}

TEST(ConfigKeys, TheTableHoldsEveryKeyOfTheSchemaOnce) {
  std::set<std::string> table;
  for (const auto& k : configKeys()) {
    EXPECT_TRUE(table.insert(std::string(k.name)).second) << k.name << " is in the table twice";
    EXPECT_EQ(k.change == KeyChange::kRestart, !k.why.empty())
        << k.name << ": a restart key says why, a live one needs no reason";
  }
  std::set<std::string> documented;
  for (const auto& [key, node] : schemaKeys()) documented.insert(key);
  EXPECT_EQ(table, documented);
}

TEST(ConfigKeys, EachKeySeesAChangeOfItsOwnValueAndOfNoOtherKey) {
  const Config base = defaults();
  for (const auto& [key, node] : schemaKeys()) {
    SCOPED_TRACE(key);
    const Config changed = configWith(key, otherValue(node));
    ASSERT_NE(changed, base) << "the value picked for " << key << " is its default";
    const auto plan = planReload(base, changed);
    std::vector<std::string> seen = names(plan.live);
    for (const auto& n : names(plan.restart)) seen.push_back(n);
    EXPECT_EQ(seen, std::vector<std::string>{key});
  }
}

TEST(ConfigKeys, CopyingEveryKeyCopiesTheWholeConfiguration) {
  // Every key changed at once; copying each key back must give the running configuration: a
  // field that no key copies would be left changed.
  json j = json::object();
  for (const auto& [key, node] : schemaKeys()) {
    json* at = &j;
    std::istringstream parts(key);
    std::vector<std::string> path;
    for (std::string part; std::getline(parts, part, '.');) path.push_back(part);
    for (std::size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
    (*at)[path.back()] = otherValue(node);
  }
  Config changed = *parseConfig(j.dump());
  const Config base = defaults();
  EXPECT_EQ(planReload(base, changed).live.size() + planReload(base, changed).restart.size(),
            configKeys().size());
  for (const auto& k : configKeys()) k.copy(changed, base);
  EXPECT_EQ(changed, base);
}

TEST(ConfigKeys, AReloadKeepsTheRunningValueOfRestartKeysAndTakesTheRest) {
  const Config running = defaults();
  auto loaded = running;
  loaded.state_dir = "/srv/elsewhere";
  loaded.sampling.threads = 7;
  loaded.log.queue_size = 64;
  loaded.log.level = "warn";
  loaded.detection.hang_threshold = std::chrono::milliseconds(5000);
  TargetConfig db;
  db.name = "db";
  db.exe = "postgres";
  loaded.targets.push_back(db);

  const auto plan = planReload(running, loaded);
  EXPECT_EQ(names(plan.restart),
            (std::vector<std::string>{"state_dir", "sampling.threads", "log.queue_size"}));
  EXPECT_EQ(names(plan.live),
            (std::vector<std::string>{"detection.hang_threshold_ms", "log.level", "targets"}));
  EXPECT_EQ(plan.next.state_dir, running.state_dir);
  EXPECT_EQ(plan.next.sampling.threads, running.sampling.threads);
  EXPECT_EQ(plan.next.log.queue_size, running.log.queue_size);
  EXPECT_EQ(plan.next.log.level, "warn");
  EXPECT_EQ(plan.next.detection.hang_threshold, std::chrono::milliseconds(5000));
  ASSERT_EQ(plan.next.targets.size(), 1U);
  EXPECT_EQ(plan.next.targets[0].name, "db");
  EXPECT_TRUE(containsKey(plan.restart, "sampling.threads"));
  EXPECT_FALSE(containsKey(plan.live, "sampling.threads"));
}

TEST(ConfigKeys, AnUnchangedFileChangesNothing) {
  const auto plan = planReload(defaults(), defaults());
  EXPECT_TRUE(plan.live.empty());
  EXPECT_TRUE(plan.restart.empty());
  EXPECT_EQ(plan.next, defaults());
}

TEST(ConfigKeys, ValuesAreShownForTheLog) {
  Config c = defaults();
  c.sampling.threads = 4;
  c.state_dir = "/srv/wctmon";
  std::map<std::string, std::string> shown;
  for (const auto& k : configKeys()) shown[std::string(k.name)] = k.show(c);
  EXPECT_EQ(shown["sampling.threads"], "4");
  EXPECT_EQ(shown["state_dir"], "/srv/wctmon");
  EXPECT_EQ(shown["sampling.interval_ms"], "1000 ms");
  EXPECT_EQ(shown["log.level"], "\"info\"");
  EXPECT_EQ(shown["alerts.sinks"], "journald");
  EXPECT_EQ(shown["targets"], "0 target(s)");
}

}  // namespace
}  // namespace wctmon::app
