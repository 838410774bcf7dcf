// Domain <-> proto: what the incident store keeps comes back as it went, in binary, and the
// proto3 JSON older stores kept parses back through protobuf into the same values.
#include "wire/proto_convert.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <limits>

#include "model/enum_names.h"
#include "wire/json_writer.h"
#include "wire/utf8.h"

namespace wctmon::wire {
namespace {

using namespace std::chrono_literals;

constexpr auto kMax64 = std::numeric_limits<std::uint64_t>::max();

WaitNode threadNode(int pid, int tid, std::string name) {
  WaitNode n;
  n.type = ObjectType::kThread;
  n.status = ObjectStatus::kBlocked;
  n.thread = ThreadRef{Pid{pid}, Tid{tid}};
  n.thread_name = std::move(name);
  n.process_name = "server";
  return n;
}

/// A chain with every field of every kind of node set, some to their extremes.
WaitChain fullChain() {
  WaitChain c;
  c.start = ThreadRef{Pid{42}, Tid{43}};
  auto first = threadNode(42, 43, "worker \"1\" \xc3\xa9");
  first.wait_time = 1500ms;
  first.context_switches = kMax64;
  c.nodes.push_back(first);
  WaitNode pipe;
  pipe.type = ObjectType::kPipe;
  pipe.status = ObjectStatus::kOwned;
  pipe.name = "pipe:[123]";
  pipe.timeout = 0ms;  // a zero timeout is not an absent one
  pipe.alertable = true;
  pipe.owner_pids = {Pid{7}, Pid{8}};
  pipe.detail = "write end held by 2 processes";
  c.nodes.push_back(pipe);
  auto second = threadNode(7, 7, "");
  second.status = ObjectStatus::kPidOnly;
  second.wait_time = 0ms;
  c.nodes.push_back(second);
  c.is_cycle = true;
  c.truncated = true;
  c.node_count = 99;
  return c;
}

ThreadCapture fullCapture() {
  ThreadCapture c;
  c.thread = ThreadRef{Pid{42}, Tid{43}};
  c.captured = true;
  c.error = "some frames missing";
  c.architecture = "x86_64";
  c.registers = {{"rip", 0x7fffdeadbeefULL}, {"rsp", 0}, {"rax", kMax64}};
  c.frames = {{0x401000, "ns::f(int)", "/usr/bin/server", 0x10, false, "src/f.cpp", 42},
              {0x402000, "", "", 0, true}};
  c.stop_time = 41000ns;
  c.tracer_pid = 9;
  c.method = CaptureMethod::kNotStopped;
  c.note = "not stopped: a write in progress";
  return c;
}

/// `message` through its binary form.
template <typename Message>
Message throughBinary(const Message& message) {
  Message back;
  EXPECT_TRUE(back.ParseFromString(message.SerializeAsString()));
  return back;
}

TEST(ProtoConvert, ChainsCapturesAndProcessesComeBackAsTheyWent) {
  const auto chain = fullChain();
  EXPECT_EQ(fromProto(throughBinary(toProto(chain))), chain);
  const auto capture = fullCapture();
  EXPECT_EQ(fromProto(throughBinary(toProto(capture))), capture);
  ThreadCapture stopped;
  stopped.thread = ThreadRef{Pid{1}, Tid{2}};
  stopped.method = CaptureMethod::kStopped;
  EXPECT_EQ(fromProto(throughBinary(toProto(stopped))), stopped);
  const IncidentProcess process{ProcessIdentity{Pid{7}, kMax64}, "python3 \"x\""};
  EXPECT_EQ(fromProto(throughBinary(toProto(process))), process);
}

TEST(ProtoConvert, AnalysesAndIncidentsComeBackAsTheyWent) {
  AnalysisResult analysis;
  analysis.pid = Pid{42};
  analysis.process_start_time = kMax64;
  analysis.process_name = "server";
  analysis.process_count = 2;
  analysis.thread_count = 9;
  analysis.chains = {fullChain()};
  analysis.deadlocks = {Deadlock{{ThreadRef{Pid{42}, Tid{43}}, ThreadRef{Pid{7}, Tid{7}}},
                                 {ThreadRef{Pid{42}, Tid{44}}}}};
  analysis.captures = {fullCapture()};
  analysis.warnings = {"process 7 exited"};
  analysis.go_programs = {
      GoProgram{Pid{42},
                "go1.19.8",
                true,
                "1 more waiting goroutines are not listed",
                9,
                {Goroutine{18, "waiting", "semacquire", "sync.Mutex.Lock", true, 61000ms,
                           fullCapture().frames},
                 Goroutine{20, "waiting", "chan receive", "chan receive", false, {}, {}}}},
      GoProgram{Pid{7}, "go1.22.1", false, "the layout of its runtime is not known", 0, {}}};
  analysis.sampled_at = std::chrono::system_clock::time_point(1'700'000'000'123'456'789ns);
  analysis.analysis_time = 1234us;
  const auto a = fromProto(throughBinary(toProto(analysis)));
  EXPECT_EQ(a.pid, analysis.pid);
  EXPECT_EQ(a.process_start_time, analysis.process_start_time);
  EXPECT_EQ(a.process_name, analysis.process_name);
  EXPECT_EQ(a.process_count, analysis.process_count);
  EXPECT_EQ(a.thread_count, analysis.thread_count);
  EXPECT_EQ(a.chains, analysis.chains);
  ASSERT_EQ(a.deadlocks.size(), 1U);
  EXPECT_EQ(a.deadlocks[0].threads, analysis.deadlocks[0].threads);
  EXPECT_EQ(a.deadlocks[0].spurs, analysis.deadlocks[0].spurs);
  EXPECT_TRUE(a.deadlocks[0].crossProcess());
  EXPECT_EQ(a.captures, analysis.captures);
  EXPECT_EQ(a.warnings, analysis.warnings);
  EXPECT_EQ(a.go_programs, analysis.go_programs);
  EXPECT_EQ(a.sampled_at, analysis.sampled_at);
  EXPECT_EQ(a.analysis_time, analysis.analysis_time);

  Incident incident;
  incident.id = 17;
  incident.kind = IncidentKind::kHang;
  incident.state = IncidentState::kResolved;
  incident.process = ProcessIdentity{Pid{42}, 99};
  incident.process_name = "server";
  incident.processes = {IncidentProcess{incident.process, "server"},
                        IncidentProcess{ProcessIdentity{Pid{7}, 5}, "child"}};
  incident.target = "db";
  incident.signature = "42:43";
  incident.threads = {ThreadRef{Pid{42}, Tid{43}}};
  incident.spurs = {ThreadRef{Pid{42}, Tid{44}}};
  incident.opened_at = analysis.sampled_at;
  incident.updated_at = analysis.sampled_at + 2s;
  incident.resolved_at = analysis.sampled_at + 3s;
  incident.resolution = "thread moved on";
  incident.summary = "thread 43 hung";
  incident.chains = {fullChain()};
  incident.evidence = {fullCapture()};
  const auto i = fromProto(throughBinary(toProto(incident)));
  EXPECT_EQ(i.id, incident.id);
  EXPECT_EQ(i.kind, incident.kind);
  EXPECT_EQ(i.state, incident.state);
  EXPECT_EQ(i.process, incident.process);
  EXPECT_EQ(i.process_name, incident.process_name);
  EXPECT_EQ(i.processes, incident.processes);
  EXPECT_EQ(i.target, incident.target);
  EXPECT_EQ(i.signature, incident.signature);
  EXPECT_EQ(i.threads, incident.threads);
  EXPECT_EQ(i.spurs, incident.spurs);
  EXPECT_EQ(i.opened_at, incident.opened_at);
  EXPECT_EQ(i.updated_at, incident.updated_at);
  EXPECT_EQ(i.resolved_at, incident.resolved_at);
  EXPECT_EQ(i.resolution, incident.resolution);
  EXPECT_EQ(i.summary, incident.summary);
  EXPECT_EQ(i.chains, incident.chains);
  EXPECT_EQ(i.evidence, incident.evidence);

  // An open deadlock has no resolution time, and keeps none.
  incident.kind = IncidentKind::kDeadlock;
  incident.state = IncidentState::kOpen;
  incident.resolved_at.reset();
  const auto open = fromProto(throughBinary(toProto(incident)));
  EXPECT_EQ(open.kind, IncidentKind::kDeadlock);
  EXPECT_EQ(open.state, IncidentState::kOpen);
  EXPECT_FALSE(open.resolved_at.has_value());
}

TEST(ProtoConvert, EveryEnumValueComesBack) {
  for (const auto& type : enumNames<ObjectType>()) {
    for (const auto& status : enumNames<ObjectStatus>()) {
      WaitChain chain;
      WaitNode node;
      node.type = type.value;
      node.status = status.value;
      if (!node.isThread()) node.name = "x";
      chain.nodes.push_back(node);
      EXPECT_EQ(fromProto(toProto(chain)), chain) << type.wire << " " << status.wire;
    }
  }
  // A value a later build may add reads as unknown.
  v1::WaitChain later;
  auto* node = later.add_nodes();
  node->set_object_type(static_cast<v1::ObjectType>(99));
  node->set_status(static_cast<v1::ObjectStatus>(99));
  EXPECT_EQ(fromProto(later).nodes[0].type, ObjectType::kUnknown);
  EXPECT_EQ(fromProto(later).nodes[0].status, ObjectStatus::kUnknown);
}

TEST(ProtoConvert, InvalidUtf8GoesOutReplacedSoThatTheBinaryFormParses) {
  // proto3 refuses to parse a string field that is not UTF-8: a thread renamed with arbitrary
  // bytes, or an error naming such a file, must not make a stored incident unreadable.
  auto chain = fullChain();
  chain.nodes[0].thread_name = "bad\xff\xfe";
  auto capture = fullCapture();
  capture.error = "cannot read /tmp/\xff";
  capture.note = "\xc0\xaf";
  capture.frames[0].module = "/opt/\xfe.so";
  capture.frames[0].file = "src/\xfe.cpp";
  const auto c = fromProto(throughBinary(toProto(chain)));
  EXPECT_EQ(c.nodes[0].thread_name, validUtf8("bad\xff\xfe"));
  const auto e = fromProto(throughBinary(toProto(capture)));
  EXPECT_EQ(e.error, validUtf8("cannot read /tmp/\xff"));
  EXPECT_EQ(e.note, validUtf8("\xc0\xaf"));
  EXPECT_EQ(e.frames[0].module, validUtf8("/opt/\xfe.so"));
  EXPECT_EQ(e.frames[0].file, validUtf8("src/\xfe.cpp"));
}

TEST(ProtoConvert, TheJsonOlderStoresKeptParsesBackThroughProtobuf) {
  // Schema versions 1 and 2 kept chains, evidence and processes as the JSON writer's output;
  // the migration reads it with protobuf's parser as the fields of one Incident.
  const std::vector<WaitChain> chains{fullChain(), fullChain()};
  const std::vector<ThreadCapture> captures{fullCapture()};
  const std::vector<IncidentProcess> processes{{ProcessIdentity{Pid{42}, 9876543210ULL}, "a"},
                                               {ProcessIdentity{Pid{7}, kMax64}, "b \"c\""}};
  const std::string json = "{\"processes\":" + processesToJson(processes) +
                           ",\"chains\":" + chainsToJson(chains) +
                           ",\"evidence\":" + capturesToJson(captures) + "}";
  v1::Incident parsed;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed, options);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(parsed.chains_size(), 2);
  EXPECT_EQ(fromProto(parsed.chains(1)), chains[1]);
  ASSERT_EQ(parsed.evidence_size(), 1);
  EXPECT_EQ(fromProto(parsed.evidence(0)), captures[0]);
  ASSERT_EQ(parsed.processes_size(), 2);
  EXPECT_EQ(fromProto(parsed.processes(1)), processes[1]);
}

}  // namespace
}  // namespace wctmon::wire
