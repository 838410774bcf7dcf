// wctmon analyze as operators run it: exit codes, JSON shape, human output, privileges.
#include <fcntl.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <thread>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using testing::CommandResult;
using testing::FixtureProcess;
using testing::runCommand;
using testing::TempDir;
using testing::threadStates;
using testing::wctmonPath;

CommandResult analyze(std::vector<std::string> args) {
  std::vector<std::string> argv{wctmonPath(), "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

TEST(Cli, DeadlockExitsThreeWithProtoJson) {
  FixtureProcess fx("mutex-abba");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pid"], fx.pid());
  EXPECT_EQ(j["thread_count"], 4);  // main, a, b and the fixture's reporter
  ASSERT_EQ(j["deadlocks"].size(), 1U);
  const auto& threads = j["deadlocks"][0]["threads"];
  ASSERT_EQ(threads.size(), 2U);
  EXPECT_EQ(threads[0]["pid"], fx.pid());
  EXPECT_EQ(threads[0]["tid"], fx.tid("a"));
  EXPECT_EQ(threads[1]["tid"], fx.tid("b"));
  ASSERT_EQ(j["chains"].size(), 4U);
  bool found = false;
  for (const auto& chain : j["chains"]) {
    EXPECT_EQ(chain["pid"], fx.pid());
    if (chain["tid"] != fx.tid("a")) continue;
    found = true;
    EXPECT_TRUE(chain["is_cycle"].get<bool>());
    const auto& nodes = chain["nodes"];
    ASSERT_EQ(nodes.size(), 5U);
    EXPECT_EQ(nodes[0]["object_type"], "OBJECT_TYPE_THREAD");
    EXPECT_EQ(nodes[0]["tid"], fx.tid("a"));
    EXPECT_EQ(nodes[0]["thread_name"], "a");
    EXPECT_EQ(nodes[1]["object_type"], "OBJECT_TYPE_MUTEX");
    EXPECT_EQ(nodes[1]["status"], "OBJECT_STATUS_OWNED");
    EXPECT_EQ(nodes[1]["name"], fx.report()["objects"]["m2"]);
    EXPECT_EQ(nodes[2]["tid"], fx.tid("b"));
  }
  EXPECT_TRUE(found);
}

TEST(Cli, HumanOutputStartsWithTheSummaryAndMarksTheCycle) {
  FixtureProcess fx("mutex-abba");
  const auto r = analyze({"--pid", std::to_string(fx.pid())});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const std::string pid = std::to_string(fx.pid());
  EXPECT_EQ(r.out.rfind("process " + pid + " (wctmon-fixture): 4 threads, 1 deadlock", 0), 0U)
      << r.out;
  EXPECT_NE(r.out.find("DEADLOCK #1: [" + pid + ":" + std::to_string(fx.tid("a")) + "]"),
            std::string::npos);
  EXPECT_NE(r.out.find("<== CYCLE"), std::string::npos);
}

TEST(Cli, TheDemoAnswersHelpAndRefusesArgumentsInsteadOfDeadlocking) {
  const auto help = runCommand({WCTMON_DEMO_PATH, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("usage: wctmon-demo\n", 0), 0U) << help.out;
  const auto wrong = runCommand({WCTMON_DEMO_PATH, "--bogus"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("unexpected argument \"--bogus\""), std::string::npos) << wrong.err;
}

TEST(Cli, NoDeadlockExitsZero) {
  FixtureProcess fx("ownerless");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["deadlocks"].empty());
}

TEST(Cli, OutputThatCannotBeWrittenIsExitOneWithAMessageNotASilentZero) {
  // A full disk under stdout: the report is lost, and the exit status must say so.
  const std::string self = std::to_string(::getpid());
  const std::string tool = wctmonPath();
  const auto config = std::string(WCTMON_SOURCE_DIR) + "/config/wctmon.json";
  for (const std::string& command :
       {tool + " validate-config " + config, tool + " analyze --pid " + self + " --json",
        tool + " analyze --pid " + self}) {
    const auto r = testing::runCommand({"/bin/sh", "-c", "exec " + command + " >/dev/full"});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("wctmon: cannot write the output"), std::string::npos)
        << command << ": " << r.err;
  }
  EXPECT_EQ(testing::runCommand(
                {"/bin/sh", "-c", "exec " + tool + " validate-config " + config + " >/dev/null"})
                .exit_code,
            0);
}

TEST(Cli, AZombieIsReportedAsAZombieNotAnalysedAsALiveProcess) {
  const pid_t child = ::fork();
  if (child == 0) _exit(0);
  // Not reaped yet: a zombie until waitpid below.
  ASSERT_TRUE(testing::waitFor(
      [&] {
        std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
        std::string text((std::istreambuf_iterator<char>(stat)), {});
        return text.find(") Z ") != std::string::npos;
      },
      std::chrono::seconds(10)));
  const auto r = analyze({"--pid", std::to_string(child)});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("process " + std::to_string(child) + " ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(") is a zombie: it has exited, and its parent (pid " +
                       std::to_string(::getpid()) + ") has not collected its exit status"),
            std::string::npos)
      << r.err;
  ::waitpid(child, nullptr, 0);
}

TEST(Cli, ACaptureKilledAtAnyMomentNeverLeavesAThreadStopped) {
  // 100 rounds: `analyze --capture` of a real deadlock, SIGKILLed at a random moment of its run
  // (which stops each thread of the cycle with ptrace to read it). The kernel detaches a dead
  // tracer's tracees; none may stay in a tracing or job-control stop.
  FixtureProcess fx("mutex-abba");
  const auto seed = std::random_device{}();
  std::mt19937 random(seed);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(analyze({"--pid", std::to_string(fx.pid()), "--capture"}).exit_code, 3);
  const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  std::uniform_int_distribution<std::int64_t> when(0, 2 * whole.count());
  const std::string pid = std::to_string(fx.pid());
  for (int round = 0; round < 100; ++round) {
    const pid_t tool = ::fork();
    if (tool == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::execl(wctmonPath(), wctmonPath(), "analyze", "--pid", pid.c_str(), "--capture", nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(when(random)));
    ::kill(tool, SIGKILL);
    ::waitpid(tool, nullptr, 0);
    for (const auto& [tid, state] : threadStates(fx.pid())) {
      ASSERT_TRUE(state != 't' && state != 'T')
          << "thread " << tid << " left in state " << state << " in round " << round << " (seed "
          << seed << ")";
    }
  }
  // And the deadlock is what it was: the same two threads still wait on each other.
  EXPECT_EQ(analyze({"--pid", pid}).exit_code, 3);
}

TEST(Cli, UnknownProcessExitsOneWithAClearMessage) {
  // The largest pid Linux can have in its range, and never a live one: pids stay below pid_max.
  const auto r = analyze({"--pid", "4194304"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "wctmon: no such process: 4194304\n");
  EXPECT_TRUE(r.out.empty());
}

/// `wctmon args...` fails as a usage error: exit 2, nothing on stdout and `line` alone on stderr.
void expectUsageError(const std::vector<std::string>& args, const std::string& line) {
  std::vector<std::string> argv{wctmonPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = runCommand(argv);
  std::string command;
  for (const auto& a : args) command += " " + a;
  EXPECT_EQ(r.exit_code, 2) << "wctmon" << command;
  EXPECT_EQ(r.err, "wctmon: " + line + "\n") << "wctmon" << command;
  EXPECT_TRUE(r.out.empty()) << "wctmon" << command;
}

TEST(Cli, AnArgumentErrorIsOneLineNamingTheOptionAndWhatIsAllowed) {
  const std::string pid = "--pid: expected a process id, a whole number from 1 to 4194304; got ";
  expectUsageError({"analyze", "--pid", "abc"}, pid + "'abc'");
  expectUsageError({"analyze", "--pid", "0"}, pid + "'0'");
  expectUsageError({"analyze", "--pid", "-5"}, pid + "'-5'");
  expectUsageError({"analyze", "--pid=-5"}, pid + "'-5'");
  expectUsageError({"analyze", "-p", "12x"}, pid + "'12x'");
  expectUsageError({"analyze", "--pid", "99999999999999999999"}, pid + "'99999999999999999999'");
  expectUsageError({"analyze", "--pid"}, pid + "nothing");
  expectUsageError({"analyze", "--pid", "1", "--pid", "2"}, "--pid: given 2 times; give it once");
  expectUsageError({"run", "--config"}, "--config: expected FILE; got nothing");
  expectUsageError({"analyze", "--pid", "1", "--max-nodes", "0"},
                   "--max-nodes: expected a node count, a whole number from 1 to 2147483647; "
                   "got '0'");
  expectUsageError({"analyze", "--pid", "1", "--all"}, "--pid and --all cannot be used together");
  expectUsageError({"analyze"}, "analyze needs --pid PID, --all or --core FILE");
  // The word, then every option the command has (whatever options are added later).
  for (const auto& [args, start] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"analyze", "--bogus"},
            "wctmon: unknown option '--bogus' for analyze; its options are "},
           {{"analyze", "--pid", "1", "extra"},
            "wctmon: unexpected argument 'extra' for analyze; its options are "}}) {
    const auto r = analyze(std::vector<std::string>(args.begin() + 1, args.end()));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(
        r.err.rfind(
            start + "--help, --pid, --all, --core, --exe, --out-of-proc, --capture, --max-nodes, ",
            0),
        0U)
        << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
    EXPECT_NE(r.err.find(", --json, --brief"), std::string::npos) << r.err;
  }
  expectUsageError({"run"}, "run needs --config FILE");
  expectUsageError({"validate-config"}, "validate-config needs FILE");
  expectUsageError({"incidents"}, "incidents needs --config FILE");
  expectUsageError({"incidents", "--config", "x", "--state", "opened"},
                   "--state: expected open, resolved or all; got 'opened' (did you mean 'open'?)");
  expectUsageError({"incidents", "--config", "x", "--state", "closed"},
                   "--state: expected open, resolved or all; got 'closed'");
  expectUsageError({"incidents", "--config", "x", "--limit", "-1"},
                   "--limit: expected a count, a whole number from 1 to 2147483647; got '-1'");
  expectUsageError({"incidents", "--config", "x", "--id", "first"},
                   "--id: expected an incident id, a whole number from 1 to 9223372036854775807; "
                   "got 'first'");
  expectUsageError({"incidents", "--config", "x", "--id", "3", "--state", "open"},
                   "--state and --id cannot be used together");
}

TEST(Cli, AnUnknownCommandIsNamedBesideTheCommandsThereAre) {
  expectUsageError({"bogus"},
                   "unknown command 'bogus'; the commands are analyze, dump, run, "
                   "validate-config, incidents");
  expectUsageError({},
                   "a command is required: analyze, dump, run, validate-config, incidents (wctmon "
                   "--help tells more)");
  expectUsageError({"--bogus"},
                   "unknown option '--bogus'; its options are --help, --version; the commands are "
                   "analyze, dump, run, validate-config, incidents");
  // A slip gets the closest word; the hidden command that writes the man page is not offered.
  expectUsageError({"analyse", "--pid", "1"},
                   "unknown command 'analyse' (did you mean 'analyze'?); the commands are "
                   "analyze, dump, run, validate-config, incidents");
  expectUsageError({"validate-cofnig", "x"},
                   "unknown command 'validate-cofnig' (did you mean 'validate-config'?); the "
                   "commands are analyze, dump, run, validate-config, incidents");
  expectUsageError({"dump", "inof", "x"},
                   "unknown command 'dump inof' (did you mean 'dump info'?); the commands of dump "
                   "are info");
  const auto slip = analyze({"--pid", "1", "--brif"});
  EXPECT_EQ(slip.exit_code, 2);
  EXPECT_EQ(slip.err.rfind("wctmon: unknown option '--brif' for analyze (did you mean '--brief'?); "
                           "its options are ",
                           0),
            0U)
      << slip.err;
}

TEST(Cli, EveryCommandsHelpListsAllItsOptions) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands{
      {"analyze",
       {"--pid PID", "--all", "--out-of-proc", "--capture", "--max-nodes N", "--json", "--brief"}},
      {"run", {"--config FILE"}},
      {"validate-config", {"FILE"}},
      // Declared in wctmond, which reads the store, and here from the same declaration.
      {"incidents", {"--config FILE", "--json", "--state STATE", "--limit N", "--id ID"}},
  };
  for (const auto& [command, options] : commands) {
    const auto r = runCommand({wctmonPath(), command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("Usage: " + std::string(wctmonPath()) + " " + command), std::string::npos)
        << r.out;
    for (const auto& option : options) {
      EXPECT_NE(r.out.find(option), std::string::npos)
          << command << " --help lacks " << option << ":\n"
          << r.out;
    }
    // With examples of the command.
    EXPECT_NE(r.out.find("Examples:\n  wctmon " + command), std::string::npos) << r.out;
  }
  const auto top = runCommand({wctmonPath(), "--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* command : {"analyze", "run", "validate-config", "incidents"}) {
    EXPECT_NE(top.out.find(command), std::string::npos) << top.out;
  }
  EXPECT_NE(top.out.find("Examples:\n  wctmon analyze --pid 4242\n"), std::string::npos) << top.out;
  EXPECT_EQ(top.out.find("__man"), std::string::npos) << top.out;
}

/// Parses `json` as a wctmon.v1.AnalyzeResult the way any proto3 client would, from the .proto
/// alone (compiled here by protoc into a descriptor set), and serializes and parses it back,
/// which checks every string field for UTF-8 again. Returns what failed, or "".
std::string protobufClientProblem(const std::string& json, const TempDir& dir) {
  namespace pb = google::protobuf;
  const auto descriptors = (dir / "wctmon.desc").string();
  const auto protoc = runCommand({WCTMON_PROTOC, "--proto_path=" WCTMON_PROTO_DIR,
                                  "--include_imports", "--descriptor_set_out=" + descriptors,
                                  WCTMON_PROTO_DIR "/wctmon/v1/wait_chain.proto"});
  if (protoc.exit_code != 0) return "protoc: " + protoc.err;
  pb::FileDescriptorSet set;
  if (!set.ParseFromString(testing::readFile(descriptors))) return "no descriptor set";
  pb::DescriptorPool pool;
  for (const auto& file : set.file()) {
    if (pool.BuildFile(file) == nullptr) return "cannot build " + file.name();
  }
  const auto* type = pool.FindMessageTypeByName("wctmon.v1.AnalyzeResult");
  if (type == nullptr) return "no wctmon.v1.AnalyzeResult";
  pb::DynamicMessageFactory factory(&pool);
  std::unique_ptr<pb::Message> message(factory.GetPrototype(type)->New());
  if (const auto status = pb::util::JsonStringToMessage(json, message.get()); !status.ok()) {
    return "JSON: " + status.ToString();
  }
  std::string wire;
  if (!message->SerializeToString(&wire)) return "cannot serialize";
  std::unique_ptr<pb::Message> back(factory.GetPrototype(type)->New());
  if (!back->ParseFromString(wire)) return "cannot parse what it serialized (UTF-8?)";
  return "";
}

TEST(Cli, NamesThatAreNotUtf8ComeOutReplacedAndEveryClientParsesTheJson) {
  FixtureProcess fx("ill-formed-names");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  TempDir dir("cli");
  const auto out = (dir / "analysis.json").string();
  std::ofstream(out, std::ios::binary) << r.out;
  // Python decodes strictly (any ill-formed byte raises), then parses; it prints each thread's
  // name by tid, and the process's, with every non-ASCII character escaped.
  const auto py = runCommand(
      {"python3", "-c",
       "import json, sys\n"
       "d = json.loads(open(sys.argv[1], 'rb').read().decode('utf-8', errors='strict'))\n"
       "names = {n['tid']: n['thread_name'] for c in d['chains'] for n in c['nodes']"
       " if n['object_type'] == 'OBJECT_TYPE_THREAD'}\n"
       "print(json.dumps({'process': d['process_name'], 'threads': names}))\n",
       out});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto names = nlohmann::json::parse(py.out);
  const std::string fffd = "\xef\xbf\xbd";
  // One U+FFFD per maximal ill-formed subpart: each byte of a surrogate or an overlong form,
  // and of a code point past U+10FFFF.
  EXPECT_EQ(names["process"], "main" + fffd + fffd + fffd + fffd);
  EXPECT_EQ(names["threads"][std::to_string(fx.tid("a"))], "a" + fffd + fffd + fffd);
  EXPECT_EQ(names["threads"][std::to_string(fx.tid("b"))], "b" + fffd + fffd);
  EXPECT_EQ(protobufClientProblem(r.out, dir), "");
}

TEST(Cli, AConfigThatCannotBeReadIsNamedWithTheSystemsReason) {
  const std::string missing = "wctmon: cannot read /nonexistent.json: No such file or directory\n";
  for (const auto& command : std::vector<std::vector<std::string>>{
           {wctmonPath(), "validate-config", "/nonexistent.json"},
           {wctmonPath(), "run", "--config", "/nonexistent.json"},
           {wctmonPath(), "incidents", "--config", "/nonexistent.json"}}) {
    const auto r = runCommand(command);
    EXPECT_EQ(r.exit_code, 1) << command[1];
    EXPECT_EQ(r.err, missing) << command[1];
  }
  const auto directory = runCommand({wctmonPath(), "validate-config", "/tmp"});
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_EQ(directory.err, "wctmon: cannot read /tmp: Is a directory\n");

  // Readable by root only: an unprivileged user is told so.
  TempDir dir("cli");
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  const auto secret = (dir / "secret.json").string();
  std::ofstream(secret) << "{}";
  std::filesystem::permissions(secret, std::filesystem::perms(0600));
  const testing::WorldExecutables binaries;
  const auto denied = runCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  binaries.wctmon(), "validate-config", secret});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_EQ(denied.err, "wctmon: cannot read " + secret + ": Permission denied\n");
}

TEST(Cli, AConfigNumberThatIsNotAnIntegerSaysWhichIntegersAreAllowed) {
  TempDir dir("cli");
  const auto file = (dir / "wctmon.json").string();
  std::ofstream(file) << R"({"sampling": {"interval_ms": 1e3},
                             "retention": {"max_incidents": 99999999999999999999}})";
  const auto r = runCommand({wctmonPath(), "validate-config", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, file +
                       ": /sampling/interval_ms: must be an integer from 10 to 86400000, written "
                       "without a fraction or exponent (got 1000.0)\n" +
                       file +
                       ": /retention/max_incidents: must be an integer from 1 to 10000000 (got "
                       "1e+20)\n");
}

TEST(Cli, UnprivilegedAnalysisOfARootProcessGetsNoAccess) {
  FixtureProcess fx("mutex-abba");
  const testing::WorldExecutables binaries;
  const auto r =
      runCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binaries.wctmon(),
                  "analyze", "--pid", std::to_string(fx.pid()), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["chains"].empty());
  for (const auto& chain : j["chains"]) {
    EXPECT_EQ(chain["nodes"][0]["status"], "OBJECT_STATUS_NO_ACCESS");
  }
  EXPECT_TRUE(j["deadlocks"].empty());
}

TEST(Cli, CaptureReportsRegistersStacksAndStopTimes) {
  FixtureProcess fx("mutex-abba");
  const auto r = analyze({"--pid", std::to_string(fx.pid()), "--capture", "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["captures"].size(), 2U);
  for (const auto& c : j["captures"]) {
    EXPECT_TRUE(c["captured"].get<bool>()) << c.dump();
    EXPECT_GT(std::stoull(c["stop_time_ns"].get<std::string>()), 0U);
    EXPECT_FALSE(c["frames"].empty());
    EXPECT_EQ(c["registers"][0]["name"], "rip");
  }
}

TEST(Cli, AllProcessesFindsTheFixtureDeadlock) {
  FixtureProcess fx("pipe-deadlock");
  const auto r = analyze({"--all", "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pid"], 0);
  bool found = false;
  for (const auto& d : j["deadlocks"]) {
    for (const auto& t : d["threads"]) found = found || t["pid"] == fx.pid();
  }
  EXPECT_TRUE(found);
}

TEST(Cli, ACycleClosedByATimedWaitSaysWhenItTimesOutAndHonoursTheBound) {
  FixtureProcess fx("timed-deadlock");  // an ABBA whose waits time out in an hour
  const auto pid = std::to_string(fx.pid());
  const auto r = analyze({"--pid", pid});
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("a wait in it times out in 59m"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<== CYCLE"), std::string::npos) << r.out;
  // With a bound past the hour left, it is a loop that will open by itself, not a deadlock.
  const auto patient = analyze({"--pid", pid, "--timed-wait-bound", "7200000"});
  EXPECT_EQ(patient.exit_code, 0) << patient.out << patient.err;
  EXPECT_NE(patient.out.find("0 deadlocks"), std::string::npos) << patient.out;
  EXPECT_EQ(patient.out.find("CYCLE"), std::string::npos) << patient.out;
  EXPECT_NE(patient.out.find("loops back, not a deadlock"), std::string::npos) << patient.out;
}

}  // namespace
}  // namespace wctmon
