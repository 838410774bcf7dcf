// wctctl as a user runs it, against a real wctmond and fixtures that really deadlock: argument
// errors with the closest word, every verb in its table and data forms (json, yaml, name,
// jsonpath, protojson), tables to a terminal's width or whole when piped, human times, the exit
// statuses 0 to 5, tokens and roles, the live stream across a restart of the service, the man
// page and the completion script written from the option tables, and thread names that try to
// steer the terminal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "support/api_service.h"
#include "support/programs.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/wctctl_status.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ApiService;
using testing::CommandResult;
using testing::FixtureProcess;
using testing::readFile;
using testing::runCommand;
using testing::runInTerminal;
using testing::waitFor;

using namespace testing::wctctl_status;

/// wctctl with nothing but `args`.
CommandResult wctctl(std::vector<std::string> args) {
  args.insert(args.begin(), WCTMON_WCTCTL_PATH);
  return runCommand(args);
}

/// wctctl asking `service` over its socket with `token` (the admin's unless given).
CommandResult wctctl(const ApiService& service, std::vector<std::string> args,
                     const std::string& token = "") {
  args.insert(args.begin(), {"--server", service.unixTarget(), "--token-file",
                             token.empty() ? service.adminToken() : token});
  return wctctl(std::move(args));
}

/// An incident's id as wctctl takes it, from its JSON (a number).
std::string idOf(const json& incident) { return std::to_string(incident.value("id", 0LL)); }

/// The output of a JSON run, parsed (a test failure, and null, when it does not parse).
json parsed(const CommandResult& r) {
  try {
    return json::parse(r.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << e.what() << " in: " << r.out;
    return {};
  }
}

/// stderr is one line, "wctctl: ..." with `text` in it.
::testing::AssertionResult oneErrorLine(const CommandResult& r, const std::string& text) {
  if (r.err.rfind("wctctl: ", 0) != 0 || r.err.find('\n') != r.err.size() - 1) {
    return ::testing::AssertionFailure() << "not one line 'wctctl: ...': " << r.err;
  }
  if (r.err.find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << "no '" << text << "' in: " << r.err;
  }
  return ::testing::AssertionSuccess();
}

/// The columns `line` takes on a terminal: one per UTF-8 character.
std::size_t columnsOf(const std::string& line) {
  return static_cast<std::size_t>(std::count_if(line.begin(), line.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

/// The open incident of process `pid`, once the service has one and its evidence (which is
/// captured after the incident is recorded); null after 20 s.
json openIncidentOf(const ApiService& service, pid_t pid) {
  json incidents;
  waitFor(
      [&] {
        const auto r = wctctl(
            service, {"incidents", "--state", "open", "--pid", std::to_string(pid), "-o", "json"});
        incidents = r.exit_code == kOk ? json::parse(r.out) : json();
        if (!incidents.contains("incidents") || incidents["incidents"].empty()) return false;
        const auto whole =
            wctctl(service, {"incident", idOf(incidents["incidents"][0]), "-o", "json"});
        return whole.exit_code == kOk && !json::parse(whole.out).value("evidence", json()).empty();
      },
      20s, 200ms);
  return incidents.contains("incidents") && !incidents["incidents"].empty()
             ? incidents["incidents"][0]
             : json();
}

/// Incident `id` whole, once its dump is recorded (taken after its evidence); null after 30 s.
json withDump(const ApiService& service, const std::string& id) {
  json whole;
  waitFor(
      [&] {
        const auto r = wctctl(service, {"incident", id, "-o", "json"});
        whole = r.exit_code == kOk ? json::parse(r.out) : json();
        return whole.contains("dump");
      },
      30s, 200ms);
  return whole.contains("dump") ? whole : json();
}

/// What `command` prints on stdout and stderr.
std::string outputOf(const std::vector<std::string>& command) {
  const auto r = runCommand(command);
  return r.out + r.err;
}

TEST(Wctctl, ArgumentErrorsAreOneLineNamingWhatIsWrongAndExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "a command is required: status, targets"},
      {{"frobnicate"}, "unknown command 'frobnicate'; the commands are status, targets"},
      // A slip gets the closest word.
      {{"stauts"}, "unknown command 'stauts' (did you mean 'status'?); the commands are"},
      {{"incidnet", "3"}, "unknown command 'incidnet' (did you mean 'incident'?)"},
      {{"targets", "lsit"},
       "unknown command 'targets lsit' (did you mean 'targets list'?); the commands of targets "
       "are list, add, remove"},
      {{"incidents", "--limt", "3"},
       "unknown option '--limt' for incidents (did you mean '--limit'?)"},
      {{"incidents", "--stat", "open"}, "(did you mean '--state'?)"},
      {{"incidents", "--state", "opne"},
       "expected open, resolved or all; got 'opne' (did you mean 'open'?)"},
      {{"status", "-o", "jsno"}, "got 'jsno' (did you mean 'json'?)"},
      {{"completion", "bsh"}, "(did you mean 'bash'?)"},
      {{"targets"}, "targets needs a command: list, add, remove"},
      {{"targets", "add"}, "targets add needs --exe NAME, --cmdline REGEX or --pid PID"},
      {{"targets", "add", "--exe", "a", "--pid", "3"}, "cannot be used together"},
      {{"targets", "add", "--pid", "x"}, "expected a process id"},
      {{"targets", "add", "--pid", "3", "--wct", "com,alpc"}, "alpc not in"},
      {{"analyze"}, "analyze needs"},
      {{"analyze", "12abc"},
       "expected a process id, a whole number from 1 to 4194304; got '12abc'"},
      {{"incidents", "--state", "closed"}, "expected open, resolved or all; got 'closed'"},
      {{"incidents", "--kind", "crash"},
       "expected deadlock, hang, unresponsive, busy, stall, service-hung, window-hung or all"},
      {{"incidents", "--since", "yesterday"}, "expected a duration back such as 1h"},
      {{"incident", "0"}, "expected an incident id"},
      {{"-o", "xml", "status"},
       "expected table, wide, json, yaml, name, jsonpath=TEMPLATE or protojson; got 'xml'"},
      {{"-o", "jsonpath={.incidents[*].id", "incidents"},
       "jsonpath: no '}' closes the '{' at column 1"},
      {{"-o", "name", "status"}, "-o name prints the names of incidents, targets and processes"},
      {{"targets", "add", "--pid", "3", "--capture", "--no-capture"}, "cannot be used together"},
      {{"status", "--timeout", "soon"}, "expected a duration such as 10s"},
      {{"status", "--bogus"}, "unknown option '--bogus'"},
  };
  for (const auto& [args, text] : cases) {
    const auto r = wctctl(args);
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_EQ(r.exit_code, kUsage) << r.err;
    EXPECT_TRUE(oneErrorLine(r, text));
    EXPECT_EQ(r.out, "");
  }
  // --help says what the exit statuses mean.
  const auto help = wctctl({"--help"});
  EXPECT_EQ(help.exit_code, kOk);
  EXPECT_NE(help.out.find("4 server unavailable"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("5 unauthenticated or permission"), std::string::npos) << help.out;
}

TEST(Wctctl, EveryHelpHasItsExamplesAndTheGlobalOptions) {
  const std::vector<std::vector<std::string>> verbs = {{"status"},
                                                       {"targets"},
                                                       {"targets", "list"},
                                                       {"targets", "add"},
                                                       {"targets", "remove"},
                                                       {"ps"},
                                                       {"analyze"},
                                                       {"dump"},
                                                       {"incidents"},
                                                       {"incident"},
                                                       {"watch"},
                                                       {"reload"},
                                                       {"health"},
                                                       {"version"},
                                                       {"completion"}};
  const auto top = wctctl({"--help"});
  EXPECT_NE(top.out.find("Examples:\n  wctctl status\n"), std::string::npos) << top.out;
  // The hidden command that writes the man page is not offered.
  EXPECT_EQ(top.out.find("__man"), std::string::npos) << top.out;
  for (auto args : verbs) {
    SCOPED_TRACE(::testing::PrintToString(args));
    const std::string verb = args.size() == 1 ? args[0] : args[0] + " " + args[1];
    args.push_back("--help");
    const auto help = wctctl(args);
    EXPECT_EQ(help.exit_code, kOk) << help.err;
    EXPECT_NE(help.out.find("Usage: wctctl " + verb), std::string::npos) << help.out;
    const auto examples = help.out.find("Examples:\n  ");
    ASSERT_NE(examples, std::string::npos) << help.out;
    EXPECT_NE(help.out.find(verb, examples), std::string::npos) << help.out;
    const auto global = help.out.find("Global options (before or after the command):");
    ASSERT_NE(global, std::string::npos) << help.out;
    for (const std::string option : {"-o,--output FORMAT", "--no-headers", "-s,--server ADDRESS",
                                     "--token-file FILE", "--timeout DURATION"}) {
      EXPECT_NE(help.out.find(option, global), std::string::npos) << option << " in " << help.out;
    }
  }
  // An option after the verb is a global one all the same.
  EXPECT_NE(wctctl({"targets", "add", "--help"}).out.find("--no-capture"), std::string::npos);
  EXPECT_NE(wctctl({"watch", "--help"}).out.find("--reconnect"), std::string::npos);
}

TEST(Wctctl, NothingAtTheSocketIsServerUnavailableNamingIt) {
  testing::TempDir dir("wctctl");
  const auto socket = "unix:" + (dir / "none.sock").string();
  const auto r = wctctl({"--server", socket, "--token-file", "/dev/null", "status"});
  EXPECT_EQ(r.exit_code, kUnavailable);
  EXPECT_TRUE(oneErrorLine(r, "wctctl: " + socket + ": cannot connect"));
  // The client's version is known without a server; the server's needs one.
  const auto version = wctctl({"--server", socket, "version"});
  EXPECT_EQ(version.exit_code, kUnavailable);
  EXPECT_EQ(version.out, "wctctl " WCTMON_VERSION "\n");
  const auto client = wctctl({"--server", socket, "version", "--client", "-o", "json"});
  EXPECT_EQ(client.exit_code, kOk) << client.err;
  EXPECT_EQ(parsed(client)["client_version"], WCTMON_VERSION);
  // A loopback port nobody listens on is the same.
  const auto tcp = wctctl({"--server", "127.0.0.1:1", "--timeout", "3s", "health"});
  EXPECT_EQ(tcp.exit_code, kUnavailable);
  EXPECT_TRUE(oneErrorLine(tcp, "wctctl: 127.0.0.1:1: "));
}

TEST(Wctctl, EveryVerbAgainstTheRealService) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  const std::string id = idOf(listed);

  const auto status = wctctl(service, {"status"});
  EXPECT_EQ(status.exit_code, kOk) << status.err;
  EXPECT_NE(status.out.find("version       " WCTMON_VERSION " (linux)"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("1 deadlock, 0 hangs"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find(", since 20"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find(" UTC\n"), std::string::npos) << status.out;
  const auto status_json = parsed(wctctl(service, {"status", "-o", "json"}));
  EXPECT_EQ(status_json["platform"], "linux");
  EXPECT_EQ(status_json["watched_processes"], 1);
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  const auto over_tcp = wctctl({"--server", service.tcpTarget(), "--token-file",
                                service.readerToken(), "-o", "json", "status"});
  EXPECT_EQ(over_tcp.exit_code, kOk) << over_tcp.err;
  EXPECT_EQ(parsed(over_tcp)["healthy"], true);

  // Targets: added, listed, removed, and one not there. (A program no other test runs: what the
  // target selects would show in ps below.)
  const auto added =
      wctctl(service, {"targets", "add", "--exe", "no-such-db", "--name", "db", "--interval-ms",
                       "500", "--out-of-proc", "--wct", "com,network_io", "-o", "json"});
  ASSERT_EQ(added.exit_code, kOk) << added.err;
  EXPECT_EQ(parsed(added)["origin"], "runtime");
  EXPECT_EQ(parsed(added)["hang_threshold_ms"], 30000);  // the file's default
  EXPECT_EQ(parsed(added)["wct"]["critical_sections"], false);
  const auto wide = wctctl(service, {"targets", "list", "-o", "wide"});
  EXPECT_NE(wide.out.find("yes (wct: com,network_io)"), std::string::npos) << wide.out;
  const auto targets = wctctl(service, {"targets", "list"});
  EXPECT_EQ(targets.exit_code, kOk);
  EXPECT_NE(targets.out.find("fixtures  cmdline=--tag="), std::string::npos) << targets.out;
  EXPECT_NE(targets.out.find("db        exe=no-such-db"), std::string::npos) << targets.out;
  const auto listed_targets = parsed(wctctl(service, {"targets", "list", "-o", "json"}));
  std::vector<std::string> names;
  for (const auto& t : listed_targets["targets"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"fixtures", "db"}));
  const auto invalid = wctctl(service, {"targets", "add", "--cmdline", "(unclosed"});
  EXPECT_EQ(invalid.exit_code, kError);
  EXPECT_TRUE(oneErrorLine(invalid, "/cmdline: not a valid regular expression"));
  const auto removed = wctctl(service, {"targets", "remove", "db"});
  EXPECT_EQ(removed.exit_code, kOk) << removed.err;
  EXPECT_EQ(removed.out, "target \"db\" removed\n");
  const auto again = wctctl(service, {"targets", "remove", "db"});
  EXPECT_EQ(again.exit_code, kError);
  EXPECT_TRUE(oneErrorLine(again, service.unixTarget() + ": no runtime target named \"db\""));

  // Processes.
  const auto ps = wctctl(service, {"ps"});
  EXPECT_EQ(ps.exit_code, kOk) << ps.err;
  EXPECT_NE(ps.out.find(std::to_string(abba.pid()) + "  wctmon-fixture  fixtures"),
            std::string::npos)
      << ps.out;
  EXPECT_NE(ps.out.find("deadlocked"), std::string::npos) << ps.out;
  const auto ps_json = parsed(wctctl(service, {"ps", "-o", "json"}));
  ASSERT_EQ(ps_json["processes"].size(), 1U) << ps_json.dump();
  EXPECT_EQ(ps_json["processes"][0]["pid"], abba.pid());

  // Incidents: piped, the table cuts nothing; filters reach the service.
  for (const auto& output : {"table", "wide"}) {
    const auto incidents = wctctl(service, {"incidents", "-o", output});
    EXPECT_EQ(incidents.exit_code, kOk) << incidents.err;
    EXPECT_NE(incidents.out.find("deadlock  open"), std::string::npos) << incidents.out;
    EXPECT_NE(incidents.out.find(listed["summary"].get<std::string>() + "\n"), std::string::npos)
        << incidents.out;
    EXPECT_EQ(incidents.out.find("\xe2\x80\xa6"), std::string::npos) << incidents.out;  // no "…"
  }
  EXPECT_EQ(parsed(wctctl(service, {"incidents", "--kind", "hang", "-o", "json"}))["incidents"],
            json::array());
  EXPECT_EQ(parsed(wctctl(service, {"incidents", "--since", "2030-01-01T00:00:00Z", "-o",
                                    "json"}))["incidents"],
            json::array());
  EXPECT_EQ(parsed(wctctl(service, {"incidents", "--since", "1h", "--target", "fixtures", "-o",
                                    "json"}))["incidents"]
                .size(),
            1U);
  // None is a notice, not a row: nothing on standard output.
  const auto none = wctctl(service, {"incidents", "--state", "resolved"});
  EXPECT_EQ(none.exit_code, kOk);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "no incidents\n");

  // One incident whole: chains as trees with their cycle, and the captured registers.
  const auto incident = wctctl(service, {"incident", id});
  EXPECT_EQ(incident.exit_code, kOk) << incident.err;
  EXPECT_NE(incident.out.find("incident #" + id + ": deadlock, open"), std::string::npos)
      << incident.out;
  EXPECT_NE(incident.out.find("<== CYCLE"), std::string::npos) << incident.out;
  EXPECT_NE(incident.out.find("registers:"), std::string::npos) << incident.out;
  EXPECT_NE(incident.out.find("rip"), std::string::npos) << incident.out;
  const auto incident_json = parsed(wctctl(service, {"incident", id, "-o", "json"}));
  EXPECT_FALSE(incident_json["chains"].empty());
  EXPECT_FALSE(incident_json["evidence"].empty());
  const auto missing = wctctl(service, {"incident", "999999"});
  EXPECT_EQ(missing.exit_code, kError);
  EXPECT_TRUE(oneErrorLine(missing, service.unixTarget() + ": no incident 999999"));

  const auto reload = wctctl(service, {"reload"});
  EXPECT_EQ(reload.exit_code, kOk) << reload.err;
  EXPECT_EQ(reload.out, "configuration reloaded: nothing changed\n");
  EXPECT_EQ(wctctl(service, {"reload", "-o", "json"}).exit_code, kOk);

  const auto health = wctctl(service, {"health"});
  EXPECT_EQ(health.exit_code, kOk) << health.err;
  EXPECT_EQ(health.out, "SERVING\n");
  EXPECT_EQ(parsed(wctctl(service, {"health", "-o", "json"}))["status"], "serving");
  EXPECT_EQ(wctctl(service, {"health", "-o", "protojson"}).out, "{\n \"status\": \"SERVING\"\n}\n");

  const auto version = wctctl(service, {"version"});
  EXPECT_EQ(version.exit_code, kOk) << version.err;
  EXPECT_EQ(version.out, "wctctl " WCTMON_VERSION "\nwctmond " WCTMON_VERSION " (linux) at " +
                             service.unixTarget() + "\n");
}

TEST(Wctctl, ANoticeAboutTheOutputGoesToStandardErrorNotIntoTheOutput) {
  ApiService service;
  FixtureProcess first("mutex-abba", "", service.tag());
  FixtureProcess second("mutex-abba", "", service.tag());
  ASSERT_FALSE(openIncidentOf(service, first.pid()).is_null()) << readFile(service.log());
  ASSERT_FALSE(openIncidentOf(service, second.pid()).is_null()) << readFile(service.log());
  const auto one = wctctl(service, {"incidents", "--limit", "1"});
  EXPECT_EQ(one.exit_code, kOk) << one.err;
  EXPECT_EQ(one.out.find("most recent"), std::string::npos) << one.out;
  EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 2) << one.out;  // header, one row
  EXPECT_EQ(one.err, "(the 1 most recent; --limit N shows more, --limit 0 all)\n");
}

TEST(Wctctl, AnalyzeOfADeadlockExitsThreeAndDrawsTheCycle) {
  ApiService service;
  FixtureProcess abba("mutex-abba");
  const auto pid = std::to_string(abba.pid());
  const auto text = wctctl(service, {"analyze", pid});
  EXPECT_EQ(text.exit_code, kDeadlock) << text.err;
  EXPECT_NE(text.out.find("process " + pid + " (wctmon-fixture): "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("DEADLOCK #1: [" + pid + ":" + std::to_string(abba.tid("a")) + "]"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  -> [Mutex 0x"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("<== CYCLE"), std::string::npos) << text.out;

  const auto as_json = wctctl(service, {"analyze", pid, "--out-of-proc", "-o", "json"});
  EXPECT_EQ(as_json.exit_code, kDeadlock) << as_json.err;
  const auto result = parsed(as_json);
  EXPECT_EQ(result["pid"], abba.pid());
  EXPECT_EQ(result["deadlocks"].size(), 1U);

  FixtureProcess idle("idle", "3");
  const auto calm = wctctl(service, {"analyze", std::to_string(idle.pid()), "--brief"});
  EXPECT_EQ(calm.exit_code, kOk) << calm.err;
  EXPECT_NE(calm.out.find("0 deadlocks"), std::string::npos) << calm.out;

  const auto gone = wctctl(service, {"analyze", "4194304"});
  EXPECT_EQ(gone.exit_code, kError);
  EXPECT_TRUE(oneErrorLine(gone, service.unixTarget() + ": "));
}

TEST(Wctctl, AnalyzeOfAGoProgramNamesItsGoroutinesWaitingOnLocks) {
  // The service's Analyze reads a Go program's goroutines as `wctmon analyze` does: its OS
  // threads idle in the scheduler say nothing of them.
  ApiService service;
  auto abba = testing::goProgram("wctctl_abba", R"(
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var m1, m2 sync.Mutex

func lockBoth(a, b *sync.Mutex, ready *sync.WaitGroup) {
	a.Lock()
	ready.Done()
	ready.Wait()
	b.Lock()
}

func main() {
	var ready sync.WaitGroup
	ready.Add(2)
	go lockBoth(&m1, &m2, &ready)
	go lockBoth(&m2, &m1, &ready)
	time.Sleep(300 * time.Millisecond)
	fmt.Printf("{\"pid\":%d,\"threads\":{},\"processes\":{}}\n", os.Getpid())
	time.Sleep(600 * time.Second)
}
)");
  const auto pid = std::to_string(abba->pid());
  CommandResult text;
  waitFor(
      [&] {
        text = wctctl(service, {"analyze", pid});
        return text.out.find("2 goroutines wait on locks whose owner is not recorded") !=
               std::string::npos;
      },
      10s, 200ms);
  EXPECT_EQ(text.exit_code, kOk) << text.err;
  EXPECT_NE(text.out.find("0 deadlocks; 2 goroutines wait on locks whose owner is not recorded"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("waits on sync.Mutex.Lock (semacquire)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" main.lockBoth+0x"), std::string::npos) << text.out;
  const auto result = parsed(wctctl(service, {"analyze", pid, "-o", "json"}));
  ASSERT_EQ(result.value("go_programs", json::array()).size(), 1U) << result.dump(1);
  EXPECT_EQ(result["go_programs"][0].value("pid", 0), abba->pid());
}

TEST(Wctctl, TokensDecideWhoMayAskWhat) {
  ApiService service;
  testing::TempDir dir("wctctl");
  std::ofstream(dir / "wrong.token") << "0123456789abcdef\n";
  const auto wrong = (dir / "wrong.token").string();

  const auto unknown = wctctl(service, {"status"}, wrong);
  EXPECT_EQ(unknown.exit_code, kDenied);
  EXPECT_TRUE(
      oneErrorLine(unknown, "unauthenticated: the service does not accept the token in " + wrong));
  const auto unreadable = wctctl(service, {"status"}, (dir / "missing.token").string());
  EXPECT_EQ(unreadable.exit_code, kDenied);
  EXPECT_TRUE(oneErrorLine(unreadable, "cannot read the token file"));

  // The reader token reads; admin calls say which token they need.
  EXPECT_EQ(wctctl(service, {"status"}, service.readerToken()).exit_code, kOk);
  EXPECT_EQ(wctctl(service, {"incidents"}, service.readerToken()).exit_code, kOk);
  for (const auto& admin_call :
       std::vector<std::vector<std::string>>{{"targets", "add", "--exe", "x"},
                                             {"targets", "remove", "x"},
                                             {"analyze", "1"},
                                             {"reload"}}) {
    const auto r = wctctl(service, admin_call, service.readerToken());
    EXPECT_EQ(r.exit_code, kDenied) << admin_call[0];
    EXPECT_TRUE(oneErrorLine(r, service.unixTarget() +
                                    ": permission denied: this call needs the admin token "
                                    "(token file " +
                                    service.readerToken() + " is the reader's)"));
  }
  // Health needs no token at all.
  EXPECT_EQ(wctctl(service, {"health"}, wrong).exit_code, kOk);
  // The token can come from the environment too.
  const auto from_env =
      runCommand({"/usr/bin/env", "WCTMON_SERVER=" + service.unixTarget(),
                  "WCTMON_TOKEN_FILE=" + service.readerToken(), WCTMON_WCTCTL_PATH, "status"});
  EXPECT_EQ(from_env.exit_code, kOk) << from_env.err;
}

TEST(Wctctl, HostileThreadNamesNeverReachTheTerminalRaw) {
  ApiService service;
  FixtureProcess hostile("hostile-names", "", service.tag());
  const auto listed = openIncidentOf(service, hostile.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  const std::string id = idOf(listed);
  const auto pid = std::to_string(hostile.pid());
  const std::vector<std::vector<std::string>> runs = {{"ps"},           {"ps", "-o", "wide"},
                                                      {"incidents"},    {"incidents", "-o", "wide"},
                                                      {"incident", id}, {"analyze", pid}};
  for (const auto& args : runs) {
    const auto r = wctctl(service, args);
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_TRUE(r.exit_code == kOk || r.exit_code == kDeadlock) << r.err;
    for (const std::string raw : {"\x1b", "\x07", "\xc2\x9b", "\xe2\x80\xae"}) {
      EXPECT_EQ(r.out.find(raw), std::string::npos) << r.out;
    }
    // Shown, visibly: the names stay recognisable.
    EXPECT_NE(r.out.find("\\u009b31m\\u202e"), std::string::npos) << r.out;
  }
  const auto analysis = wctctl(service, {"analyze", pid});
  EXPECT_NE(analysis.out.find("a\\x1b]0;pwn\\x07"), std::string::npos) << analysis.out;
  EXPECT_NE(analysis.out.find("b\\x1b[2J\\x1b[H"), std::string::npos) << analysis.out;

  // JSON carries the names as they are, escaped by JSON itself.
  const auto json_run = wctctl(service, {"analyze", pid, "-o", "json"});
  EXPECT_EQ(json_run.out.find('\x1b'), std::string::npos);
  const auto analysis_json = parsed(json_run);
  std::vector<std::string> names;
  for (const auto& chain : analysis_json["chains"]) {
    for (const auto& node : chain["nodes"]) {
      if (node["object_type"] == "thread") names.push_back(node["thread_name"]);
    }
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "a\x1b]0;pwn\x07"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "b\x1b[2J\x1b[H"), names.end());
}

TEST(Wctctl, WatchShowsTheOpenIncidentsThenADeadlockAsItForms) {
  ApiService service;
  FixtureProcess before("mutex-abba", "", service.tag());
  ASSERT_FALSE(openIncidentOf(service, before.pid()).is_null()) << readFile(service.log());
  FixtureProcess on_demand("abba-on-demand", "", service.tag());

  // One JSON object per line: the first is the incident open when the watch began.
  FixtureProcess watch({WCTMON_WCTCTL_PATH, "--server", service.unixTarget(), "--token-file",
                        service.readerToken(), "watch", "-o", "json"},
                       20s);
  EXPECT_EQ(watch.report()["type"], "existing") << watch.report().dump();
  EXPECT_EQ(watch.report()["incident"]["pid"], before.pid());

  ASSERT_TRUE(on_demand.tell("go"));
  json opened;
  for (auto line = watch.nextLine(20s); !line.empty(); line = watch.nextLine(20s)) {
    const auto event = json::parse(line);
    if (event["type"] == "opened" && event["incident"]["pid"] == on_demand.pid()) {
      opened = event;
      break;
    }
  }
  ASSERT_FALSE(opened.is_null()) << readFile(service.log());
  EXPECT_EQ(opened["incident"]["kind"], "deadlock");
  // A list's item: its empty lists of objects left out.
  EXPECT_FALSE(opened["incident"].contains("evidence")) << opened.dump();

  // Ctrl+C ends the watch at once.
  ::kill(watch.pid(), SIGINT);
  EXPECT_TRUE(waitFor([&] { return watch.reapIfExited(); }, 5s));
}

TEST(Wctctl, ADeadlockIncidentCarriesADumpThatGdbOpensWithTheIncidentInside) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  const std::string id = idOf(listed);
  const auto whole = withDump(service, id);
  ASSERT_FALSE(whole.is_null()) << readFile(service.log());
  const auto& dump = whole["dump"];
  ASSERT_EQ(dump.value("error", ""), "") << dump.dump();
  const std::filesystem::path path = dump["path"].get<std::string>();
  EXPECT_EQ(path.parent_path(), service.stateDir() / "dumps");
  EXPECT_EQ(path.filename().string().rfind(
                "incident-" + id + "-pid-" + std::to_string(abba.pid()) + "-", 0),
            0U)
      << path;
  EXPECT_EQ(dump["format"], "elf-core");
  EXPECT_EQ(dump["bytes"].get<std::uintmax_t>(), std::filesystem::file_size(path));
  EXPECT_EQ(outputOf({"sha256sum", path.string()}).substr(0, 64), dump["sha256"]);
  EXPECT_NE(dump["method"].get<std::string>().find("held for their registers"), std::string::npos)
      << dump;
  // Only the service's account reads it.
  EXPECT_EQ(std::filesystem::status(path).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(std::filesystem::status(path.parent_path()).permissions(),
            std::filesystem::perms::owner_all);

  // The dump knows why it was taken: the incident, inside it and beside it.
  const auto info = runCommand({testing::wctmonPath(), "dump", "info", path.string()});
  ASSERT_EQ(info.exit_code, kOk) << info.err;
  const auto inside = json::parse(info.out);
  EXPECT_EQ(inside["id"], id);
  EXPECT_EQ(inside["kind"], "INCIDENT_KIND_DEADLOCK");
  EXPECT_EQ(inside["threads"], whole["threads"]);
  EXPECT_FALSE(inside["evidence"].empty()) << "taken after the evidence, which it carries";
  EXPECT_EQ(json::parse(readFile(path.string() + ".json")), inside);
  // Post-mortem, the cycle is found again from the core alone.
  const auto again = runCommand(
      {testing::wctmonPath(), "analyze", "--core", path.string(), "--exe", testing::fixturePath()});
  EXPECT_EQ(again.exit_code, kDeadlock) << again.out << again.err;

  // gdb opens it with the cycle's frames named.
  const auto bt = outputOf({"gdb", "-nx", "-batch", "-ex", "thread apply all bt",
                            testing::fixturePath(), path.string()});
  EXPECT_NE(bt.find("abba"), std::string::npos) << bt;
  EXPECT_TRUE(bt.find("pthread_mutex_lock") != std::string::npos ||
              bt.find("lll_lock_wait") != std::string::npos)
      << bt;

  // wctctl incident shows where it is; the text names the same file.
  const auto text = wctctl(service, {"incident", id});
  EXPECT_NE(text.out.find("  dump: " + path.string() + "\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("SHA-256 " + dump["sha256"].get<std::string>()), std::string::npos);
}

TEST(Wctctl, DumpAsksTheServiceForADumpNowAndOnlyTheAdminMay) {
  ApiService service("", R"("capture": {"dump": "none"}, )");
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  // capture.dump none: the incident has its evidence and no dump.
  const auto whole = parsed(wctctl(service, {"incident", idOf(listed), "-o", "json"}));
  EXPECT_FALSE(whole.contains("dump")) << whole.dump();

  const auto pid = std::to_string(abba.pid());
  const auto made = wctctl(service, {"dump", pid});
  ASSERT_EQ(made.exit_code, kOk) << made.err;
  const auto first_line = made.out.substr(0, made.out.find('\n'));
  ASSERT_EQ(first_line.rfind("dump: ", 0), 0U) << made.out;
  const std::filesystem::path path = first_line.substr(6);
  EXPECT_EQ(path.parent_path(), service.stateDir() / "dumps");
  EXPECT_EQ(path.filename().string().rfind("pid-" + pid + "-", 0), 0U) << path;
  EXPECT_NE(made.out.find("elf-core, " + std::to_string(std::filesystem::file_size(path)) +
                          " bytes, SHA-256 "),
            std::string::npos)
      << made.out;
  // Inside: the analysis taken just before, which found the deadlock.
  const auto inside =
      json::parse(runCommand({testing::wctmonPath(), "dump", "info", path.string()}).out);
  EXPECT_EQ(inside["pid"], abba.pid());
  EXPECT_EQ(inside["deadlocks"].size(), 1U) << inside.dump();

  const auto as_json = parsed(wctctl(service, {"dump", pid, "-o", "json"}));
  EXPECT_NE(as_json.value("path", ""), path.string());  // a second dump, a second file
  EXPECT_TRUE(std::filesystem::exists(as_json.value("path", "")));

  const auto reader = wctctl(service, {"dump", pid}, service.readerToken());
  EXPECT_EQ(reader.exit_code, kDenied);
  EXPECT_TRUE(oneErrorLine(reader, "permission denied"));
  const auto gone = wctctl(service, {"dump", "4194304"});
  EXPECT_EQ(gone.exit_code, kError);
  EXPECT_TRUE(oneErrorLine(gone, "no such process"));
  const auto usage = wctctl(service, {"dump", "x"});
  EXPECT_EQ(usage.exit_code, kUsage);
}

TEST(Wctctl, ADumpThatDoesNotFitTheCapIsARecordedReasonAndTheIncidentIsKept) {
  // 5 MiB in all: less than a dump's room (headers and 1 MiB of memory), once a file of an
  // earlier dump of this incident's id takes some of it.
  ApiService service("", R"("capture": {"dump_max_mb": 1, "dumps_max_total_mb": 5}, )");
  std::filesystem::create_directories(service.stateDir() / "dumps");
  {
    std::ofstream filler(service.stateDir() / "dumps" / "incident-1-pid-1-old.core");
    filler << std::string(1024 * 1024, 'x');
  }
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  ASSERT_EQ(listed["id"], 1);
  const auto whole = withDump(service, "1");
  ASSERT_FALSE(whole.is_null()) << readFile(service.log());
  EXPECT_EQ(whole["dump"].value("path", ""), "");
  EXPECT_NE(whole["dump"]["error"].get<std::string>().find(
                "take 1 MiB of the 5 MiB capture.dumps_max_total_mb allows"),
            std::string::npos)
      << whole["dump"];
  EXPECT_EQ(whole["state"], "open");
  EXPECT_FALSE(whole["evidence"].empty());
  const auto text = wctctl(service, {"incident", "1"});
  EXPECT_NE(text.out.find("  dump: none (the dumps in "), std::string::npos) << text.out;
}

/// wctctl asking `service` with a terminal of `columns` columns as its output.
CommandResult wctctlInTerminal(const ApiService& service, std::vector<std::string> args,
                               unsigned short columns) {
  args.insert(args.begin(), {WCTMON_WCTCTL_PATH, "--server", service.unixTarget(), "--token-file",
                             service.adminToken()});
  return runInTerminal(args, columns);
}

/// The longest line of `text`, in columns.
std::size_t longestLine(const std::string& text) {
  std::size_t longest = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) longest = std::max(longest, columnsOf(line));
  return longest;
}

TEST(Wctctl, TablesFitTheTerminalAndAreWholeWhenPiped) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  const std::string summary = listed["summary"];
  ASSERT_GT(summary.size(), 60U) << summary;

  // Piped: every row whole, however long.
  const auto piped = wctctl(service, {"incidents"});
  EXPECT_NE(piped.out.find(summary + "\n"), std::string::npos) << piped.out;
  EXPECT_GT(longestLine(piped.out), 100U) << piped.out;

  // On terminals of 72 and 100 columns: each row fits, the summary cut with "…".
  for (const unsigned short columns : {72, 100}) {
    SCOPED_TRACE(columns);
    const auto shown = wctctlInTerminal(service, {"incidents"}, columns);
    EXPECT_EQ(shown.exit_code, kOk) << shown.out;
    EXPECT_LE(longestLine(shown.out), columns) << shown.out;
    EXPECT_NE(shown.out.find("\xe2\x80\xa6\n"), std::string::npos) << shown.out;
    EXPECT_EQ(shown.out.find(summary), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("deadlock  open"), std::string::npos) << shown.out;
  }
  // Wide cuts nothing, on a terminal too.
  const auto wide = wctctlInTerminal(service, {"incidents", "-o", "wide"}, 72);
  EXPECT_NE(wide.out.find(summary + "\n"), std::string::npos) << wide.out;
  // The status wraps its long values under their column on a terminal, not when piped.
  // (The server line aside: the socket's path is one word longer than that.)
  const auto withoutServer = [](const std::string& text) { return text.substr(text.find('\n')); };
  const auto status = wctctlInTerminal(service, {"status"}, 45);
  EXPECT_LE(longestLine(withoutServer(status.out)), 45U) << status.out;
  const auto whole = wctctl(service, {"status"});
  EXPECT_GT(longestLine(withoutServer(whole.out)), 45U) << whole.out;
  EXPECT_NE(whole.out.find("alerts        none (alerts are off (alerts.sinks is empty))\n"),
            std::string::npos)
      << whole.out;
}

TEST(Wctctl, NoHeadersAndEveryOutputForm) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  const auto id = idOf(listed);
  const auto pid = std::to_string(abba.pid());

  // --no-headers: the rows alone.
  const auto rows = wctctl(service, {"incidents", "--no-headers"});
  EXPECT_EQ(rows.out.rfind(id + "  deadlock  open", 0), 0U) << rows.out;
  EXPECT_EQ(std::count(rows.out.begin(), rows.out.end(), '\n'), 1) << rows.out;
  EXPECT_EQ(wctctl(service, {"ps", "--no-headers"}).out.rfind(pid + "  wctmon-fixture", 0), 0U);
  EXPECT_EQ(wctctl(service, {"--no-headers", "targets", "list"}).out.rfind("fixtures  cmdline=", 0),
            0U);

  // -o name: kind/name, one a line.
  EXPECT_EQ(wctctl(service, {"incidents", "-o", "name"}).out, "incident/" + id + "\n");
  EXPECT_EQ(wctctl(service, {"incident", id, "-o", "name"}).out, "incident/" + id + "\n");
  EXPECT_EQ(wctctl(service, {"ps", "-o", "name"}).out, "process/" + pid + "\n");
  EXPECT_EQ(wctctl(service, {"targets", "list", "-o", "name"}).out, "target/fixtures\n");
  EXPECT_EQ(wctctl(service, {"analyze", pid, "-o", "name"}).out, "process/" + pid + "\n");
  const auto added =
      wctctl(service, {"targets", "add", "--exe", "no-such-thing", "--name", "x", "-o", "name"});
  EXPECT_EQ(added.out, "target/x\n") << added.err;
  EXPECT_EQ(wctctl(service, {"targets", "remove", "x", "-o", "name"}).out, "target/x\n");

  // -o json: enum values as the flags spell them, ids as numbers; a list's items without their
  // empty lists of objects, which one incident whole keeps.
  const auto list = parsed(wctctl(service, {"incidents", "-o", "json"}));
  ASSERT_EQ(list["incidents"].size(), 1U) << list.dump();
  const auto& item = list["incidents"][0];
  EXPECT_EQ(item["kind"], "deadlock");
  EXPECT_EQ(item["state"], "open");
  EXPECT_TRUE(item["id"].is_number_integer());
  EXPECT_FALSE(item.contains("chains")) << item.dump();
  EXPECT_FALSE(item.contains("evidence")) << item.dump();
  const auto whole = parsed(wctctl(service, {"incident", id, "-o", "json"}));
  EXPECT_FALSE(whole["chains"].empty());
  EXPECT_EQ(whole["chains"][0]["nodes"][0]["object_type"], "thread");
  const auto status = parsed(wctctl(service, {"status", "-o", "json"}));
  EXPECT_EQ(status["open_incidents"][0]["kind"], "deadlock");
  EXPECT_EQ(status["open_incidents"][0]["count"], 1);

  // -o protojson: the proto3 mapping exactly, for API clients.
  const auto proto = parsed(wctctl(service, {"incidents", "-o", "protojson"}));
  EXPECT_EQ(proto["incidents"][0]["kind"], "INCIDENT_KIND_DEADLOCK");
  EXPECT_EQ(proto["incidents"][0]["state"], "INCIDENT_STATE_OPEN");
  EXPECT_EQ(proto["incidents"][0]["id"], id);
  EXPECT_EQ(proto["incidents"][0]["chains"], json::array());
  EXPECT_EQ(parsed(wctctl(service, {"targets", "list", "-o", "protojson"}))["targets"][0]["origin"],
            "TARGET_ORIGIN_CONFIG");

  // -o yaml: the same document as -o json, read back by a YAML reader.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"incidents"}, {"incident", id}, {"status"}, {"ps"}, {"targets", "list"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    auto as_yaml = args;
    as_yaml.insert(as_yaml.end(), {"-o", "yaml"});
    const auto yaml = wctctl(service, as_yaml);
    ASSERT_EQ(yaml.exit_code, kOk) << yaml.err;
    testing::TempDir dir("yaml");
    std::ofstream(dir / "out.yaml") << yaml.out;
    const auto read =
        runCommand({"python3", "-c",
                    "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                    (dir / "out.yaml").string()});
    ASSERT_EQ(read.exit_code, 0) << read.err << yaml.out;
    auto as_json = args;
    as_json.insert(as_json.end(), {"-o", "json"});
    auto expected = parsed(wctctl(service, as_json));
    auto got = json::parse(read.out);
    // Times and counters move between the two runs.
    for (auto* doc : {&expected, &got}) {
      for (const auto* moving :
           {"uptime", "samples", "samples_skipped", "samples_overdue", "last_sample_duration",
            "p99_sample_duration", "watched_threads", "sample_errors"}) {
        doc->erase(moving);
      }
      if (doc->contains("processes")) {
        for (auto& p : (*doc)["processes"]) p.erase("last_sample_at");
      }
    }
    EXPECT_EQ(got, expected) << yaml.out;
  }

  // -o jsonpath: kubectl's templates.
  EXPECT_EQ(wctctl(service, {"incidents", "-o", "jsonpath={.incidents[*].id}"}).out, id);
  EXPECT_EQ(wctctl(service, {"status", "-o", "jsonpath={.healthy}"}).out, "true");
  EXPECT_EQ(wctctl(service, {"incidents", "-o",
                             "jsonpath={range .incidents[?(@.kind==\"deadlock\")]}{.id}{\"\\t\"}"
                             "{.pid}{\"\\n\"}{end}"})
                .out,
            id + "\t" + pid + "\n");
  EXPECT_EQ(wctctl(service, {"ps", "-o", "jsonpath=.processes[0].target"}).out, "fixtures");
}

TEST(Wctctl, TimesAreShownInUtcWithTheirAge) {
  ApiService service;
  FixtureProcess abba("mutex-abba", "", service.tag());
  const auto listed = openIncidentOf(service, abba.pid());
  ASSERT_FALSE(listed.is_null()) << readFile(service.log());
  const std::regex ago(R"(\b(just now|\d+s ago|\d+m ago)\b)");
  const std::regex stamp(
      R"(\b20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|\d+s ago|\d+m ago)\))");
  const auto table = wctctl(service, {"incidents"});
  EXPECT_NE(table.out.find("OPENED"), std::string::npos) << table.out;
  EXPECT_TRUE(std::regex_search(table.out, ago)) << table.out;
  const auto wide = wctctl(service, {"incidents", "-o", "wide"});
  EXPECT_TRUE(std::regex_search(wide.out, stamp)) << wide.out;
  // The time the incident opened, as the API says it, in UTC.
  const std::string opened = listed["opened_at"];  // 2026-11-27T10:00:01.123Z
  EXPECT_NE(wide.out.find(opened.substr(0, 10) + " " + opened.substr(11, 8) + " UTC ("),
            std::string::npos)
      << wide.out << opened;

  // When each process started, not clock ticks since boot.
  const auto ps = wctctl(service, {"ps", "-o", "wide"});
  EXPECT_NE(ps.out.find("STARTED"), std::string::npos) << ps.out;
  EXPECT_TRUE(std::regex_search(ps.out, stamp)) << ps.out;
  EXPECT_EQ(ps.out.find(std::to_string(listed["process_start_time"].get<std::uint64_t>())),
            std::string::npos)
      << ps.out;
  const auto started = parsed(wctctl(service, {"ps", "-o", "json"}))["processes"][0]["started_at"];
  ASSERT_TRUE(started.is_string()) << started;
  // The fixture started a few seconds ago: the same minute as now, or the one before.
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char today[16];
  std::strftime(today, sizeof(today), "%Y-%m-%d", &utc);
  EXPECT_EQ(started.get<std::string>().substr(0, 10), today) << started;
}

TEST(Wctctl, TargetsAddCapturesAsTheConfigurationSaysUnlessToldOtherwise) {
  ApiService service;
  const auto captures = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {"targets", "add", "--exe", "no-such-thing", "--name", "t"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"-o", "json"});
    const auto r = wctctl(service, args);
    EXPECT_EQ(r.exit_code, kOk) << r.err;
    return parsed(r).value("capture", json());
  };
  // Neither flag: capture.enabled, on by default.
  EXPECT_EQ(captures({}), true);
  EXPECT_EQ(captures({"--no-capture"}), false);
  const auto table = wctctl(service, {"targets", "list", "--no-headers"});
  std::istringstream lines(table.out);
  std::string line;
  while (std::getline(lines, line) && line.rfind("t ", 0) != 0) {
  }
  EXPECT_NE(line.find("  no  "), std::string::npos) << table.out;
  EXPECT_EQ(captures({"--capture"}), true);
}

TEST(Wctctl, CompletionScriptsCompleteTheVerbsInBash) {
  testing::TempDir dir("completion");
  const auto script = wctctl({"completion", "bash"});
  ASSERT_EQ(script.exit_code, kOk) << script.err;
  std::ofstream(dir / "wctctl.bash") << script.out;
  const auto completes = [&](const std::vector<std::string>& words) {
    std::ofstream driver(dir / "driver.bash");
    driver << "source '" << (dir / "wctctl.bash").string() << "'\nCOMP_WORDS=(";
    for (const auto& w : words) driver << " '" << w << "'";
    driver << ")\nCOMP_CWORD=" << words.size() - 1
           << "\n_wctctl\n[[ ${#COMPREPLY[@]} -eq 0 ]] || printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    driver.close();
    const auto r = runCommand({"bash", (dir / "driver.bash").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(completes({"wctctl", "sta"}), "status\n");
  EXPECT_EQ(completes({"wctctl", "inc"}), "incidents\nincident\n");
  EXPECT_EQ(completes({"wctctl", "targets", "r"}), "remove\n");
  EXPECT_EQ(completes({"wctctl", "incidents", "--kind", "s"}), "stall\nservice-hung\n");
  EXPECT_EQ(completes({"wctctl", "-s", "unix:/x", "watch", "--re"}), "--reconnect\n");
  EXPECT_EQ(completes({"wctctl", "ps", "-o", "y"}), "yaml\n");
  EXPECT_EQ(completes({"wctctl", "completion", "f"}), "fish\n");
  EXPECT_EQ(completes({"wctctl", "__m"}), "");
  // The other shells' scripts, from the same tables.
  for (const std::string shell : {"zsh", "fish", "powershell"}) {
    const auto other = wctctl({"completion", shell});
    EXPECT_EQ(other.exit_code, kOk) << other.err;
    EXPECT_NE(other.out.find("reconnect"), std::string::npos) << shell;
    EXPECT_NE(other.out.find("service-hung"), std::string::npos) << shell;
  }
}

TEST(Wctctl, TheManPageIsWrittenFromTheOptionTables) {
  testing::TempDir dir("man");
  const auto page = wctctl({"__man", "--date", "2026-11-27"});
  ASSERT_EQ(page.exit_code, kOk) << page.err;
  std::ofstream(dir / "wctctl.1") << page.out;
  const auto warnings =
      runCommand({"/usr/bin/env", "LC_ALL=C.UTF-8", "MANWIDTH=80", "man", "--warnings", "-E",
                  "UTF-8", "-l", "-Tutf8", "-Z", (dir / "wctctl.1").string()});
  EXPECT_EQ(warnings.exit_code, 0);
  EXPECT_EQ(warnings.err, "");
  const auto text = runCommand(
      {"/usr/bin/env", "LC_ALL=C.UTF-8", "MANWIDTH=80", "man", "-l", (dir / "wctctl.1").string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("wctctl - ask and steer a running wctmon service"), std::string::npos);
  // Every command and option of --help is in it, with the examples.
  for (const std::string word :
       {"status", "targets add", "targets remove NAME", "analyze PID", "incident ID", "watch",
        "completion SHELL", "--reconnect", "--no-capture", "--no-headers", "--kind KIND",
        "wctctl incidents --state open --kind deadlock", "EXIT STATUS", "WCTMON_SERVER",
        "/var/lib/wctmon/api-reader.token"}) {
    EXPECT_NE(text.out.find(word), std::string::npos) << word << " in:\n" << text.out;
  }
  EXPECT_EQ(text.out.find("__man"), std::string::npos);
}

TEST(Wctctl, WatchReconnectsAcrossARestartOfTheServiceAndPrintsNothingTwice) {
  ApiService service;
  FixtureProcess before("mutex-abba", "", service.tag());
  const auto first = openIncidentOf(service, before.pid());
  ASSERT_FALSE(first.is_null()) << readFile(service.log());
  testing::TempDir dir("watch");
  const auto out = dir / "out";
  const auto err = dir / "err";
  // stdout and stderr apart: the events on one, the notices on the other.
  testing::BackgroundProcess watch(
      {"sh", "-c",
       "exec " + std::string(WCTMON_WCTCTL_PATH) + " --server " + service.unixTarget() +
           " --token-file " + service.readerToken() + " watch --reconnect -o json 2>" +
           err.string()},
      out);
  ASSERT_TRUE(waitFor([&] { return readFile(out).find("\n") != std::string::npos; }, 10s))
      << readFile(err);
  const auto lines = [&] {
    std::vector<json> events;
    std::istringstream text(readFile(out));
    for (std::string line; std::getline(text, line);) events.push_back(json::parse(line));
    return events;
  };
  ASSERT_EQ(lines().size(), 1U);
  EXPECT_EQ(lines()[0]["type"], "existing");
  EXPECT_EQ(lines()[0]["incident"]["id"], first["id"]);

  // A restart: the watch says so on stderr, waits, and goes on. The deadlocked process ends
  // meanwhile: its incident is resolved while no stream is open.
  service.terminate();
  ASSERT_TRUE(
      waitFor([&] { return readFile(err).find("connecting again") != std::string::npos; }, 10s))
      << readFile(err);
  before.kill();
  service.start();
  ASSERT_TRUE(
      waitFor([&] { return readFile(err).find("watching again") != std::string::npos; }, 40s))
      << readFile(err) << readFile(service.log());
  // The incident open before is not printed again; one that opens now is.
  FixtureProcess after("mutex-abba", "", service.tag());
  ASSERT_TRUE(waitFor(
      [&] {
        const auto events = lines();
        return std::any_of(events.begin(), events.end(),
                           [&](const json& e) { return e["incident"]["pid"] == after.pid(); });
      },
      20s))
      << readFile(out) << readFile(err);
  // The first incident: shown open once, then resolved once.
  ASSERT_TRUE(waitFor(
      [&] {
        const auto events = lines();
        return std::any_of(events.begin(), events.end(), [&](const json& e) {
          return e["incident"]["id"] == first["id"] && e["type"] == "resolved";
        });
      },
      20s))
      << readFile(out) << readFile(err);
  std::vector<std::string> first_events;
  for (const auto& e : lines()) {
    if (e["incident"]["id"] == first["id"]) first_events.push_back(e["type"]);
  }
  EXPECT_EQ(first_events, (std::vector<std::string>{"existing", "resolved"})) << readFile(out);
  EXPECT_EQ(readFile(err).find("wctctl: " + service.unixTarget() + ": "), 0U) << readFile(err);
  EXPECT_NE(::kill(watch.pid(), 0), -1) << "the watch ended: " << readFile(err);

  // Without --reconnect, a stop ends the watch with the reason.
  const auto plain = dir / "plain";
  testing::BackgroundProcess once({WCTMON_WCTCTL_PATH, "--server", service.unixTarget(),
                                   "--token-file", service.readerToken(), "watch"},
                                  plain);
  ASSERT_TRUE(waitFor([&] { return !readFile(plain).empty(); }, 10s));
  service.terminate();
  int status = 0;
  ASSERT_TRUE(waitFor([&] { return ::waitpid(once.pid(), &status, WNOHANG) == once.pid(); }, 10s))
      << readFile(plain);
  EXPECT_EQ(WEXITSTATUS(status), kUnavailable);
  EXPECT_NE(readFile(plain).find("wctctl: " + service.unixTarget() + ": the watch ended: "),
            std::string::npos)
      << readFile(plain);
}

}  // namespace
}  // namespace wctmon
