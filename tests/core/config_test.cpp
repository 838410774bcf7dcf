#include "core/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/probe_config.h"
#include "model/enum_names.h"

namespace wctmon {
namespace {

std::vector<std::string> errorsOf(std::string_view json) {
  const auto parsed = parseConfig(json);
  std::vector<std::string> out;
  if (parsed) return out;
  for (const auto& e : parsed.error()) out.push_back(e.toString());
  return out;
}

TEST(Config, EmptyObjectGivesEveryDefault) {
  const auto parsed = parseConfig("{}");
  ASSERT_TRUE(parsed.ok());
  const auto& c = *parsed;
  EXPECT_EQ(c.state_dir, "/var/lib/wctmon");
  EXPECT_EQ(c.sampling.interval, std::chrono::milliseconds(1000));
  EXPECT_EQ(c.sampling.threads, 0U);
  EXPECT_EQ(c.detection.hang_threshold, std::chrono::seconds(30));
  EXPECT_EQ(c.detection.ignore_waits, defaultIgnoredWaits());
  EXPECT_EQ(c.detection.window_hung, std::chrono::milliseconds(5000));
  EXPECT_FALSE(c.services.watch.any());
  EXPECT_EQ(c.services.interval, std::chrono::milliseconds(1000));
  EXPECT_EQ(c.services.no_hint_wait, std::chrono::milliseconds(30000));
  EXPECT_EQ(c.alerts.sinks, std::vector<Config::AlertSinkConfig>{
                                Config::AlertSinkConfig::systemLog(platformDefaults().alert_sink)});
  EXPECT_EQ(c.log.level, "info");
  EXPECT_TRUE(c.targets.empty());
}

TEST(Config, TargetsInheritTheDefaultsAndOverrideThem) {
  const auto parsed = parseConfig(R"({
    "state_dir": "/tmp/w",
    "sampling": {"interval_ms": 500},
    "detection": {"hang_threshold_ms": 2000, "ignore_waits": ["poll"]},
    "capture": {"enabled": false},
    "targets": [
      {"exe": "postgres*"},
      {"name": "api", "cmdline": "java .*-jar api\\.jar", "interval_ms": 250,
       "hang_threshold_ms": 5000, "out_of_proc": true, "wct": {"com": false}, "capture": true,
       "ignore_waits": ["futex", "pipe"]},
      {"pid": 4242},
      {"all": true}
    ]})");
  ASSERT_TRUE(parsed.ok()) << parsed.error().front().toString();
  const auto& t = parsed->targets;
  ASSERT_EQ(t.size(), 4U);
  EXPECT_EQ(t[0].name, "postgres*");
  EXPECT_EQ(t[0].exe, "postgres*");
  EXPECT_EQ(t[0].interval, std::chrono::milliseconds(500));
  EXPECT_EQ(t[0].hang_threshold, std::chrono::milliseconds(2000));
  EXPECT_EQ(t[0].ignore_waits, std::vector<ObjectType>{ObjectType::kPoll});
  EXPECT_FALSE(t[0].capture);
  EXPECT_EQ(t[1].name, "api");
  EXPECT_EQ(t[1].interval, std::chrono::milliseconds(250));
  EXPECT_TRUE(t[1].out_of_proc);
  EXPECT_EQ(t[1].wct, (WctFlags{.com = false, .critical_sections = true, .network_io = true}));
  EXPECT_EQ(t[0].wct, WctFlags{});
  EXPECT_TRUE(t[1].capture);
  EXPECT_EQ(t[1].ignore_waits, (std::vector<ObjectType>{ObjectType::kFutex, ObjectType::kPipe}));
  EXPECT_EQ(t[2].pid, Pid{4242});
  EXPECT_EQ(t[2].name, "pid 4242");
  EXPECT_TRUE(t[3].all);
}

TEST(Config, ErrorsNameThePointerAndTheReason) {
  EXPECT_EQ(errorsOf(R"({"sampling": {"interval_ms": "fast"}})"),
            std::vector<std::string>{"/sampling/interval_ms: must be an integer, not a string"});
  EXPECT_EQ(errorsOf(R"({"sampling": {"interval_ms": 0}})"),
            std::vector<std::string>{
                "/sampling/interval_ms: must be an integer from 10 to 86400000 (got 0)"});
  EXPECT_EQ(errorsOf(R"({"state_dir": "relative"})"),
            std::vector<std::string>{"/state_dir: must be an absolute path (got \"relative\")"});
  EXPECT_EQ(errorsOf(R"({"sampling": {"intervall_ms": 5}})"),
            std::vector<std::string>{"/sampling/intervall_ms: unknown key"});
  EXPECT_EQ(errorsOf(R"({"targets": [{"all": true, "wct": {"com": 1, "alpc": true}}]})"),
            (std::vector<std::string>{"/targets/0/wct/com: must be true or false, not a number",
                                      "/targets/0/wct/alpc: unknown key"}));
  EXPECT_EQ(errorsOf(R"({"targets": [{"all": true, "wct": true}]})"),
            std::vector<std::string>{"/targets/0/wct: must be an object, not a boolean"});
  EXPECT_EQ(errorsOf(R"({"alerts": {"sink": "email"}})"),
            std::vector<std::string>{
                "/alerts/sink: must be one of journald, syslog, eventlog, none (got \"email\")"});
  EXPECT_EQ(errorsOf(R"({"alerts": {"sink": "syslog", "sinks": ["journald"]}})"),
            std::vector<std::string>{
                "/alerts/sink: give alerts.sinks or alerts.sink (its one-sink form), not both"});
  EXPECT_EQ(errorsOf(R"({"alerts": {"sinks": "journald"}})"),
            std::vector<std::string>{"/alerts/sinks: must be an array of sinks, not a string"});
  EXPECT_EQ(
      errorsOf(R"({"alerts": {"sinks": ["journald", {"type": "smtp"}, {"queue": 5},
                                                 "journald", {"type": "syslog", "queue": 0}]}})"),
      (std::vector<std::string>{
          "/alerts/sinks/1: unknown alert sink type \"smtp\" (journald, syslog, eventlog, "
          "alertmanager or webhook)",
          "/alerts/sinks/2: needs a type: journald, syslog, eventlog, alertmanager or webhook",
          "/alerts/sinks/3: the sink journald is listed twice",
          "/alerts/sinks/4/queue: must be an integer from 1 to 1000000 (got 0)"}));
  EXPECT_EQ(errorsOf(R"({"targets": {}})"),
            std::vector<std::string>{"/targets: must be an array of targets, not an object"});
  EXPECT_EQ(
      errorsOf(R"({"targets": [{"interval_ms": 100}]})"),
      std::vector<std::string>{"/targets/0: needs a selector: exe, cmdline, pid or \"all\": true"});
  EXPECT_EQ(errorsOf(R"({"targets": [{"exe": "x"}, {"cmdline": "(["}]})").size(), 1U);
  EXPECT_EQ(errorsOf(R"({"targets": [{"exe": "x"}, {"cmdline": "(["}]})")[0].rfind(
                "/targets/1/cmdline: not a valid regular expression", 0),
            0U);
  EXPECT_EQ(errorsOf(R"({"targets": [{"exe": "x", "all": true}]})"),
            std::vector<std::string>{
                "/targets/0/all: \"all\" cannot be combined with exe, cmdline or pid"});
  EXPECT_EQ(errorsOf(R"({"targets": [{"exe": "x", "ignore_waits": ["mutexx", 3]}]})"),
            (std::vector<std::string>{
                "/targets/0/ignore_waits/0: unknown wait type \"mutexx\"",
                "/targets/0/ignore_waits/1: must be a wait type name, not a number"}));
  EXPECT_EQ(errorsOf("[]"), std::vector<std::string>{"/: must be an object, not an array"});
  EXPECT_EQ(errorsOf("{\"a/b\": 1}"), std::vector<std::string>{"/a~1b: unknown key"});
}

TEST(Config, ServicesAreWatchedByNameOrAllAndWindowsProbedUnlessTheThresholdIsZero) {
  const auto named = parseConfig(R"({
    "services": {"watch": ["Spooler", "W32Time"], "interval_ms": 250, "no_hint_wait_ms": 5000},
    "detection": {"window_hung_ms": 0}})");
  ASSERT_TRUE(named.ok()) << named.error().front().toString();
  EXPECT_EQ(named->services.watch,
            (Config::ServiceSelection{.all = false, .names = {"Spooler", "W32Time"}}));
  EXPECT_TRUE(named->services.watch.any());
  EXPECT_EQ(named->services.interval, std::chrono::milliseconds(250));
  EXPECT_EQ(named->services.no_hint_wait, std::chrono::milliseconds(5000));
  EXPECT_EQ(named->detection.window_hung, std::chrono::milliseconds(0));

  const auto all = parseConfig(R"({"services": {"watch": "all"},
                                   "detection": {"window_hung_ms": 1000}})");
  ASSERT_TRUE(all.ok()) << all.error().front().toString();
  EXPECT_EQ(all->services.watch, (Config::ServiceSelection{.all = true, .names = {}}));
  EXPECT_EQ(all->detection.window_hung, std::chrono::milliseconds(1000));
  // An empty list is none, as an absent key.
  const auto none = parseConfig(R"({"services": {"watch": []}})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->services.watch.any());
}

TEST(Config, ServiceAndWindowKeysSayWhatIsWrongWhere) {
  EXPECT_EQ(errorsOf(R"({"services": {"watch": "some"}})"),
            std::vector<std::string>{
                "/services/watch: must be \"all\" or an array of service names (got \"some\")"});
  EXPECT_EQ(errorsOf(R"({"services": {"watch": {"Spooler": true}}})"),
            std::vector<std::string>{
                "/services/watch: must be \"all\" or an array of service names, not an object"});
  EXPECT_EQ(
      errorsOf(R"({"services": {"watch": ["Spooler", 7, "", "a\\b", "spooler"]}})"),
      (std::vector<std::string>{
          "/services/watch/1: must be a service name, not a number",
          "/services/watch/2: must be a service key name of 1 to 256 characters without / or \\ "
          "(got \"\")",
          "/services/watch/3: must be a service key name of 1 to 256 characters without / or \\ "
          "(got \"a\\b\")",
          "/services/watch/4: \"spooler\" is listed twice (service names do not differ by case)"}));
  EXPECT_EQ(errorsOf(R"({"services": {"interval_ms": 50, "no_hint_wait_ms": 10, "hint": 1}})"),
            (std::vector<std::string>{
                "/services/interval_ms: must be an integer from 100 to 86400000 (got 50)",
                "/services/no_hint_wait_ms: must be an integer from 1000 to 86400000 (got 10)",
                "/services/hint: unknown key"}));
  EXPECT_EQ(errorsOf(R"({"services": ["Spooler"]})"),
            std::vector<std::string>{"/services: must be an object, not an array"});
  EXPECT_EQ(errorsOf(R"({"detection": {"window_hung_ms": 500}})"),
            std::vector<std::string>{"/detection/window_hung_ms: must be 0 (windows are not "
                                     "probed) or at least 1000 ms (got 500)"});
  EXPECT_EQ(errorsOf(R"({"detection": {"window_hung_ms": -1}})"),
            std::vector<std::string>{
                "/detection/window_hung_ms: must be an integer from 0 to 86400000 (got -1)"});
}

TEST(Config, AlertSinksAreAListOfTypesOrObjectsAndTheOneSinkFormStillReads) {
  const auto listed =
      parseConfig(R"({"alerts": {"sinks": ["journald", {"type": "syslog", "queue": 50}]}})");
  ASSERT_TRUE(listed) << listed.error().front().toString();
  auto syslog = Config::AlertSinkConfig::systemLog(AlertSinkKind::kSyslog);
  syslog.queue = 50;
  EXPECT_EQ(listed->alerts.sinks,
            (std::vector<Config::AlertSinkConfig>{
                Config::AlertSinkConfig::systemLog(AlertSinkKind::kJournald), syslog}));
  EXPECT_TRUE(parseConfig(R"({"alerts": {"sinks": []}})")->alerts.sinks.empty());
  EXPECT_EQ(parseConfig(R"({"alerts": {"sink": "syslog"}})")->alerts.sinks,
            std::vector<Config::AlertSinkConfig>{
                Config::AlertSinkConfig::systemLog(AlertSinkKind::kSyslog)});
  EXPECT_TRUE(parseConfig(R"({"alerts": {"sink": "none"}})")->alerts.sinks.empty());
}

TEST(Config, HttpSinksNeedAUrlAndTwoOfATypeNeedTheirOwnNames) {
  const auto parsed = parseConfig(R"({"alerts": {"sinks": [
      {"type": "alertmanager", "url": "http://am.example:9093"},
      {"type": "webhook", "url": "https://hooks.example/wctmon", "token_file": "/etc/wctmon/hook",
       "ca_file": "/etc/wctmon/ca.pem", "retry_for_ms": 30000, "timeout_ms": 2000},
      {"type": "webhook", "name": "chat", "url": "http://127.0.0.1:8080/chat"}]}})");
  ASSERT_TRUE(parsed) << parsed.error().front().toString();
  const auto& sinks = parsed->alerts.sinks;
  ASSERT_EQ(sinks.size(), 3U);
  EXPECT_EQ(sinks[0].type, AlertSinkKind::kAlertmanager);
  EXPECT_EQ(sinks[0].name, "alertmanager");
  EXPECT_EQ(sinks[0].url, "http://am.example:9093");
  EXPECT_EQ(sinks[0].retry_for, std::chrono::minutes(10));
  EXPECT_EQ(sinks[1].name, "webhook");
  EXPECT_EQ(sinks[1].token_file, "/etc/wctmon/hook");
  EXPECT_EQ(sinks[1].ca_file, "/etc/wctmon/ca.pem");
  EXPECT_EQ(sinks[1].retry_for, std::chrono::seconds(30));
  EXPECT_EQ(sinks[1].timeout, std::chrono::seconds(2));
  EXPECT_EQ(sinks[2].name, "chat");

  EXPECT_EQ(errorsOf(R"({"alerts": {"sinks": ["webhook", {"type": "alertmanager"},
      {"type": "webhook", "url": "ftp://x"}, {"type": "journald", "url": "http://x"},
      {"type": "webhook", "url": "http://a"}, {"type": "webhook", "url": "http://b"}]}})"),
            (std::vector<std::string>{
                "/alerts/sinks/0: a sink of type webhook is an object with its url: {\"type\": "
                "\"webhook\", \"url\": \"http://...\"}",
                "/alerts/sinks/1: a sink of type alertmanager needs a url",
                "/alerts/sinks/2/url: " + parseHttpUrl("ftp://x").error().message,
                "/alerts/sinks/3/url: unknown key",
                "/alerts/sinks/5: the sink webhook is listed twice (give each its own \"name\")"}));
}

TEST(Config, AKeyGivenTwiceIsRefusedWhereverItIs) {
  // JSON parsers keep one of the two silently: a second "targets" would replace the first.
  EXPECT_EQ(errorsOf(R"({"targets": [], "targets": [{"exe": "x"}]})"),
            std::vector<std::string>{"/targets: given twice in one object: only one would count"});
  EXPECT_EQ(
      errorsOf(R"({"targets": [{"exe": "a"}, {"exe": "b", "name": "n", "exe": "c"}]})"),
      std::vector<std::string>{"/targets/1/exe: given twice in one object: only one would count"});
  EXPECT_EQ(
      errorsOf(R"({"log": {"level": "info"}, "api": {"tls": {"a/b": 1, "a/b": 2}}})"),
      (std::vector<std::string>{"/api/tls/a~1b: given twice in one object: only one would count",
                                "/api/tls/a~1b: unknown key"}));
  // The same key in two objects is no repetition.
  EXPECT_TRUE(errorsOf(R"({"targets": [{"exe": "a"}, {"exe": "b"}]})").empty());
  const auto twice = parseTarget(R"({"exe": "a", "exe": "b"})", Config{});
  ASSERT_FALSE(twice);
  ASSERT_EQ(twice.error().size(), 1U);
  EXPECT_EQ(twice.error()[0].toString(), "/exe: given twice in one object: only one would count");
}

TEST(Config, AWaitTypeListedTwiceIsRefusedAsTheSchemaSays) {
  EXPECT_EQ(errorsOf(R"({"detection": {"ignore_waits": ["futex", "poll", "futex"]}})"),
            std::vector<std::string>{"/detection/ignore_waits/2: \"futex\" is listed twice"});
  EXPECT_EQ(errorsOf(R"({"targets": [{"all": true, "ignore_waits": ["sleep", "sleep"]}]})"),
            std::vector<std::string>{"/targets/0/ignore_waits/1: \"sleep\" is listed twice"});
}

TEST(Config, StringsWithANulAndALogFileOutsideTheStateDirectoryAreRefused) {
  EXPECT_EQ(errorsOf(R"({"state_dir": "/var/lib/wct\u0000mon"})"),
            std::vector<std::string>{"/state_dir: must not contain a NUL character (\\u0000)"});
  EXPECT_EQ(errorsOf(R"({"targets": [{"exe": "a\u0000"}]})"),
            std::vector<std::string>{"/targets/0/exe: must not contain a NUL character (\\u0000)"});
  for (const char* outside : {"../x", "logs/../../x", "/var/log/wctmon.log"}) {
    EXPECT_EQ(
        errorsOf(std::string(R"({"log": {"file": ")") + outside + R"("}})"),
        std::vector<std::string>{std::string("/log/file: must be a file under state_dir (got \"") +
                                 outside + "\")"})
        << outside;
  }
  EXPECT_TRUE(errorsOf(R"({"log": {"file": "logs/./wctmon.log"}})").empty());
  EXPECT_TRUE(errorsOf(R"({"log": {"file": "logs/../wctmon.log"}})").empty());
  EXPECT_TRUE(errorsOf(R"({"log": {"file": ""}})").empty());  // no file
}

TEST(Config, IntegerKeysSayWhatIsAllowedWhateverNumberTheyGet) {
  // JSON reads these as fractional numbers; the error says what an integer key takes instead.
  EXPECT_EQ(errorsOf(R"({"sampling": {"interval_ms": 1e3}})"),
            std::vector<std::string>{"/sampling/interval_ms: must be an integer from 10 to "
                                     "86400000, written without a fraction or exponent (got "
                                     "1000.0)"});
  EXPECT_EQ(errorsOf(R"({"retention": {"max_incidents": 99999999999999999999}})"),
            std::vector<std::string>{
                "/retention/max_incidents: must be an integer from 1 to 10000000 (got 1e+20)"});
  EXPECT_EQ(
      errorsOf(R"({"sampling": {"threads": 2.5}})"),
      std::vector<std::string>{"/sampling/threads: must be an integer from 0 to 256 (got 2.5)"});
  // Beyond int64 but still an unsigned 64-bit integer: never wrapped to a negative "got".
  EXPECT_EQ(
      errorsOf(R"({"targets": [{"pid": 18446744073709551615}]})"),
      std::vector<std::string>{
          "/targets/0/pid: must be an integer from 1 to 2147483647 (got 18446744073709551615)"});
  EXPECT_EQ(errorsOf(R"({"log": {"max_files": -3}})"),
            std::vector<std::string>{"/log/max_files: must be an integer from 1 to 100 (got -3)"});
}

TEST(Config, EveryErrorIsReportedAtOnce) {
  const auto errors = errorsOf(R"({"sampling": {"interval_ms": -1, "threads": "x"},
                                   "log": {"level": "loud"}, "extra": 1})");
  EXPECT_EQ(errors.size(), 4U);
}

TEST(Config, MalformedJsonIsAnError) {
  const auto errors = errorsOf("{\"sampling\": ");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].rfind("/: not valid JSON", 0), 0U);
}

TEST(Config, ANumberNoDoubleCanHoldIsAnErrorNotAnException) {
  // Found by the config fuzz target under Wine: nlohmann's out_of_range escaped the loader, so
  // that such a file ended the service at start or at a reload.
  const auto errors = errorsOf(R"({"sampling": {"interval_ms": 8e400000}})");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].rfind("/: not valid JSON", 0), 0U) << errors[0];
  EXPECT_NE(errors[0].find("number overflow"), std::string::npos) << errors[0];
  const auto target = parseTarget(R"({"name": "x", "pid": 1e999})", Config{});
  ASSERT_FALSE(target);
  EXPECT_EQ(target.error().size(), 1U);
}

TEST(Config, WaitTypeKeys) {
  EXPECT_EQ(waitTypeKey(ObjectType::kCriticalSection), "critical_section");
  EXPECT_EQ(waitTypeKey(ObjectType::kKernelWait), "kernel_wait");
  EXPECT_EQ(waitTypeFromKey("rw_lock"), ObjectType::kRwLock);
  EXPECT_FALSE(waitTypeFromKey("nope").has_value());
  EXPECT_FALSE(waitTypeFromKey("RwLock").has_value());
  // Every type, including any added later, is a key that reads back as itself.
  for (const auto& n : kObjectTypeNames) {
    EXPECT_EQ(waitTypeFromKey(waitTypeKey(n.value)), n.value) << n.display;
  }
  EXPECT_EQ(waitTypeFromKey("fifo_open"), ObjectType::kFifoOpen);
}

TEST(Config, TargetsRoundTripThroughJson) {
  const auto defaults = *parseConfig("{}");
  auto target = parseTarget(R"({"name": "db", "exe": "postgres", "hang_threshold_ms": 700,
                                "out_of_proc": true,
                                "wct": {"critical_sections": false, "network_io": false},
                                "ignore_waits": ["poll"]})",
                            defaults);
  ASSERT_TRUE(target.ok());
  auto again = parseTarget(targetToJson(*target), defaults);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *target);
  const auto unnamed = parseTarget(R"({"name": "x"})", defaults);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_FALSE(unnamed.error().empty());
}

TEST(Config, TheShippedDefaultConfigIsValid) {
  const auto parsed = loadConfig(WCTMON_SOURCE_DIR "/config/wctmon.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().front().toString();
  EXPECT_FALSE(parsed->targets.empty());

  // The Windows service's (installed by the MSI): the Event Log, the state directory by default.
  const auto windows = loadConfig(WCTMON_SOURCE_DIR "/config/wctmon.windows.json");
  ASSERT_TRUE(windows.ok()) << windows.error().front().toString();
  EXPECT_EQ(windows->alerts.sinks,
            std::vector<Config::AlertSinkConfig>{
                Config::AlertSinkConfig::systemLog(AlertSinkKind::kEventLog)});
  EXPECT_EQ(windows->state_dir, platformDefaults().state_dir);
  EXPECT_FALSE(windows->log.console);  // no console under the SCM
}

TEST(Config, AFileThatCannotBeReadNamesThePathAndTheSystemsReason) {
  const auto missing = loadConfig("/nonexistent/wctmon.json");
  ASSERT_FALSE(missing);
  ASSERT_EQ(missing.error().size(), 1U);
  EXPECT_TRUE(missing.error()[0].unreadable);
  EXPECT_EQ(missing.error()[0].toString(),
            "cannot read /nonexistent/wctmon.json: No such file or directory");
  // It names the file itself: no "FILE: /: cannot read FILE".
  EXPECT_EQ(missing.error()[0].describe("/nonexistent/wctmon.json"),
            "cannot read /nonexistent/wctmon.json: No such file or directory");

  const auto directory = loadConfig("/tmp");
  ASSERT_FALSE(directory);
  ASSERT_EQ(directory.error().size(), 1U);
  EXPECT_EQ(directory.error()[0].toString(), "cannot read /tmp: Is a directory");

  const auto below_a_file = loadConfig(WCTMON_SOURCE_DIR "/config/wctmon.json/x.json");
  ASSERT_FALSE(below_a_file);
  ASSERT_EQ(below_a_file.error().size(), 1U);
  EXPECT_EQ(below_a_file.error()[0].toString(),
            "cannot read " WCTMON_SOURCE_DIR "/config/wctmon.json/x.json: Not a directory");
}

TEST(Config, ErrorsInAFileArePrefixedWithItsPath) {
  const ConfigError error{"/sampling/interval_ms", "must be an integer, not a string"};
  EXPECT_EQ(error.describe("/etc/wctmon/wctmon.json"),
            "/etc/wctmon/wctmon.json: /sampling/interval_ms: must be an integer, not a string");
}

TEST(Config, TheApiListensOnTheRuntimeSocketAndLoopbackByDefault) {
  const auto config = *parseConfig("{}");
  EXPECT_TRUE(config.api.enabled);
  EXPECT_EQ(config.api.listen,
            (std::vector<std::string>{"unix:/run/wctmon/api.sock", "127.0.0.1:7787"}));
  EXPECT_EQ(config.api.admin_token_file, "api-admin.token");
  EXPECT_EQ(config.api.reader_token_file, "api-reader.token");
  EXPECT_EQ(config.api.group, "wctmon");
  const auto other = parseConfig(R"({"api": {"listen": ["[::1]:9000", "unix:/tmp/w.sock"],
                                            "group": "",
                                            "tls": {"cert_file": "/c.pem", "key_file": "/k.pem"}}})");
  ASSERT_TRUE(other) << other.error().front().toString();
  EXPECT_EQ(other->api.listen, (std::vector<std::string>{"[::1]:9000", "unix:/tmp/w.sock"}));
  EXPECT_EQ(other->api.group, "");
  EXPECT_EQ(other->api.tls_cert_file, "/c.pem");
}

TEST(Config, ListenAddressesAreCheckedAndOnlyLoopbackGoesWithoutTls) {
  EXPECT_EQ(errorsOf(R"({"api": {"listen": ["0.0.0.0:7787"]}})"),
            (std::vector<std::string>{
                "/api/listen/0: \"0.0.0.0:7787\" is not a loopback address: listening there needs "
                "TLS (api.tls.cert_file and api.tls.key_file), or listen on a Unix socket, "
                "127.0.0.1 or [::1]"}));
  EXPECT_EQ(
      errorsOf(R"({"api": {"listen": ["[fe80::1]:7787"], "tls": {"cert_file": "/c"}}})").size(),
      1U);  // a certificate without its key is no TLS
  EXPECT_TRUE(errorsOf(R"({"api": {"listen": ["10.0.0.1:7787"],
                                   "tls": {"cert_file": "/c", "key_file": "/k"}}})")
                  .empty());
  EXPECT_TRUE(errorsOf(R"({"api": {"listen": ["127.1.2.3:1", "[0:0:0:0:0:0:0:1]:2"]}})").empty());
  EXPECT_EQ(errorsOf(R"({"api": {"listen": ["localhost:7787", "unix:relative", "1.2.3.4",
                                            "[::1]:70000", 5]}})"),
            (std::vector<std::string>{
                "/api/listen/0: \"localhost:7787\": the host must be an IP address (an IPv6 one "
                "in brackets) (expected \"unix:/PATH\", \"IPV4:PORT\" or \"[IPV6]:PORT\")",
                "/api/listen/1: a Unix socket needs an absolute path "
                "(\"unix:/run/wctmon/api.sock\"), got \"unix:relative\"",
                "/api/listen/2: \"1.2.3.4\": no port (expected \"unix:/PATH\", \"IPV4:PORT\" or "
                "\"[IPV6]:PORT\")",
                "/api/listen/3: \"[::1]:70000\": the port must be a number from 0 to 65535 "
                "(expected \"unix:/PATH\", \"IPV4:PORT\" or \"[IPV6]:PORT\")",
                "/api/listen/4: must be a string such as \"unix:/run/wctmon/api.sock\" or "
                "\"127.0.0.1:7787\", not a number"}));
  EXPECT_EQ(errorsOf(R"({"api": {"tls": {"cert": "/c"}}})"),
            (std::vector<std::string>{"/api/tls/cert: unknown key"}));
}

}  // namespace
}  // namespace wctmon

namespace wctmon {
namespace {

TEST(ProbeConfig, EachTypeReadsWhatItNeedsAndDefaultsTheRest) {
  auto c = parseConfig(R"({"targets": [
      {"exe": "web", "probe": {"type": "http", "url": "https://[::1]:8443/healthz?deep=1",
                               "status": 204, "body_contains": "up", "interval_ms": 1000,
                               "timeout_ms": 500, "failures": 2, "successes": 3}},
      {"exe": "db", "probe": {"type": "tcp", "address": "localhost:5432"}},
      {"exe": "api", "probe": {"type": "grpc_health", "address": "127.0.0.1:50051",
                               "service": "pkg.Svc"}},
      {"exe": "ctl", "probe": {"type": "unix", "path": "/run/ctl.sock"}},
      {"exe": "a", "probe": {"type": "exec", "command": ["/usr/bin/check", "--quick"]}},
      {"exe": "b", "probe": {"type": "exec", "command": "pg_isready -q"}}]})");
  ASSERT_TRUE(c) << c.error().front().toString();
  const auto& t = c->targets;
  const auto& http = *t[0].probe;
  EXPECT_EQ(http.type, ProbeConfig::Type::kHttp);
  EXPECT_TRUE(http.url.tls);
  EXPECT_EQ(http.url.endpoint, (Endpoint{"::1", 8443}));
  EXPECT_EQ(http.url.target, "/healthz?deep=1");
  EXPECT_EQ(http.status, 204);
  EXPECT_EQ(http.interval, std::chrono::milliseconds(1000));
  EXPECT_EQ(http.timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(http.failures, 2U);
  EXPECT_EQ(http.successes, 3U);
  EXPECT_EQ(http.describe(), "https://[::1]:8443/healthz?deep=1");
  const auto& tcp = *t[1].probe;
  EXPECT_EQ(tcp.endpoint, (Endpoint{"localhost", 5432}));
  EXPECT_EQ(tcp.interval, std::chrono::milliseconds(5000));
  EXPECT_EQ(tcp.timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(tcp.failures, 3U);
  EXPECT_EQ(tcp.successes, 1U);
  EXPECT_EQ(t[2].probe->service, "pkg.Svc");
  EXPECT_EQ(t[3].probe->path, "/run/ctl.sock");
  EXPECT_EQ(t[4].probe->command, (std::vector<std::string>{"/usr/bin/check", "--quick"}));
  EXPECT_FALSE(t[4].probe->shell);
  EXPECT_EQ(t[5].probe->command, std::vector<std::string>{"pg_isready -q"});
  EXPECT_TRUE(t[5].probe->shell);
  EXPECT_FALSE(t[0].probe == std::nullopt);

  // The JSON form reads back as the same target (targets registered through the API).
  for (const auto& target : t) {
    auto back = parseTarget(targetToJson(target), *c);
    ASSERT_TRUE(back) << back.error().front().toString();
    EXPECT_EQ(back->probe, target.probe) << targetToJson(target);
  }
}

TEST(ProbeConfig, AProbeThatCannotStartIsAConfigError) {
  const auto errors = [](std::string_view probe) {
    return errorsOf(R"({"targets": [{"exe": "x", "probe": )" + std::string(probe) + "}]}");
  };
  EXPECT_EQ(errors(R"({"url": "http://a/"})"),
            std::vector<std::string>{
                "/targets/0/probe/type: is required: tcp, http, grpc_health, unix or exec"});
  EXPECT_EQ(errors(R"({"type": "icmp"})").size(), 1U);
  EXPECT_EQ(errors(R"({"type": "tcp", "address": "db"})"),
            std::vector<std::string>{"/targets/0/probe/address: \"db\" has no port (HOST:PORT)"});
  EXPECT_EQ(
      errors(R"({"type": "tcp", "address": "db:99999"})"),
      std::vector<std::string>{"/targets/0/probe/address: \"99999\" is not a port (1 to 65535)"});
  EXPECT_EQ(errors(R"({"type": "tcp", "address": "d b:80"})"),
            std::vector<std::string>{
                "/targets/0/probe/address: \"d b\" is not a host name or an IPv4 address"});
  EXPECT_EQ(errors(R"({"type": "tcp"})"),
            std::vector<std::string>{"/targets/0/probe/address: is required for a tcp probe"});
  EXPECT_EQ(errors(R"({"type": "http", "url": "ftp://a/"})"),
            std::vector<std::string>{
                "/targets/0/probe/url: \"ftp://a/\" is not an http:// or https:// URL"});
  EXPECT_EQ(
      errors(R"({"type": "http", "url": "http://u:p@a/"})"),
      std::vector<std::string>{"/targets/0/probe/url: credentials in the URL are not supported"});
  EXPECT_EQ(errors(R"({"type": "http", "url": "http://a/", "address": "a:1"})"),
            std::vector<std::string>{"/targets/0/probe/address: does not apply to a http probe"});
  EXPECT_EQ(errors(R"({"type": "unix", "path": "run/x.sock"})"),
            std::vector<std::string>{"/targets/0/probe/path: must be an absolute path"});
  EXPECT_EQ(errors(R"({"type": "exec", "command": []})").size(), 1U);
  EXPECT_EQ(errors(R"({"type": "exec", "command": ["ok", ""]})").size(), 1U);
  EXPECT_EQ(errors(R"({"type": "tcp", "address": "a:1", "interval_ms": 1000, "timeout_ms": 2000})"),
            std::vector<std::string>{"/targets/0/probe/timeout_ms: must not be longer than "
                                     "interval_ms (one probe in flight)"});
  EXPECT_EQ(errors(R"({"type": "tcp", "address": "a:1", "failures": 0})").size(), 1U);
  EXPECT_EQ(errors(R"({"type": "tcp", "address": "a:1", "retries": 3})"),
            std::vector<std::string>{"/targets/0/probe/retries: unknown key"});
}

}  // namespace
}  // namespace wctmon
