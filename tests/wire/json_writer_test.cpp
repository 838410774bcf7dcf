// The fast JSON writer must say exactly what protobuf's proto3 JSON mapping says.
#include "wire/json_writer.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/enum_names.h"
#include "wire/proto_convert.h"
#include "wire/utf8.h"

namespace wctmon::wire {
namespace {

WaitNode thread(int pid, int tid, std::string name, ObjectStatus status) {
  WaitNode n;
  n.type = ObjectType::kThread;
  n.status = status;
  n.thread = ThreadRef{Pid{pid}, Tid{tid}};
  n.thread_name = std::move(name);
  n.process_name = "server";
  n.context_switches = 123456789012ULL;
  return n;
}

WaitNode object(ObjectType type, ObjectStatus status, std::string name) {
  WaitNode n;
  n.type = type;
  n.status = status;
  n.name = std::move(name);
  n.detail = "pthread_mutex (normal)";
  n.alertable = true;
  return n;
}

AnalysisResult sample() {
  AnalysisResult r;
  r.pid = Pid{42};
  r.process_start_time = 123456789;
  r.process_name = "server";
  r.process_count = 1;
  r.thread_count = 3;
  WaitChain c;
  c.start = ThreadRef{Pid{42}, Tid{43}};
  c.nodes.push_back(thread(42, 43, "worker \"1\"\n", ObjectStatus::kBlocked));
  c.nodes.push_back(object(ObjectType::kMutex, ObjectStatus::kOwned, "0x7f00"));
  auto second = thread(42, 44, "bad\xff\xfe utf8 \x01", ObjectStatus::kBlocked);
  second.wait_time = std::chrono::milliseconds(1500);
  c.nodes.push_back(second);
  auto pipe = object(ObjectType::kPipe, ObjectStatus::kOwned, "pipe:[1]");
  pipe.owner_pids = {Pid{7}, Pid{8}};
  pipe.timeout = std::chrono::milliseconds(0);
  c.nodes.push_back(pipe);
  c.nodes.push_back(thread(7, 7, "", ObjectStatus::kPidOnly));
  c.is_cycle = false;
  c.truncated = true;
  c.node_count = 99;
  r.chains.push_back(c);
  WaitChain running;
  running.start = ThreadRef{Pid{42}, Tid{42}};
  running.nodes.push_back(thread(42, 42, "main", ObjectStatus::kRunning));
  running.node_count = 1;
  r.chains.push_back(running);
  Deadlock d;
  d.threads = {ThreadRef{Pid{42}, Tid{43}}, ThreadRef{Pid{7}, Tid{7}}};
  d.spurs = {ThreadRef{Pid{42}, Tid{45}}};
  r.deadlocks.push_back(d);
  ThreadCapture ok;
  ok.thread = ThreadRef{Pid{42}, Tid{43}};
  ok.captured = true;
  ok.architecture = "x86_64";
  ok.registers = {{"rip", 0x7fffdeadbeefULL}, {"rsp", 0}};
  ok.frames = {{0x401000, "ns::f(int)", "/usr/bin/server", 0x10, false, "./src/f.cpp", 42},
               {0x402000, "", "", 0}};
  ok.stop_time = std::chrono::nanoseconds(41000);
  r.captures.push_back(ok);
  ThreadCapture traced;
  traced.thread = ThreadRef{Pid{7}, Tid{7}};
  traced.error = "already traced by process 9";
  traced.tracer_pid = 9;
  r.captures.push_back(traced);
  r.warnings = {"a warning", "tab\there"};
  Goroutine locked{
      18,       "waiting", "semacquire", "sync.Mutex.Lock", true, std::chrono::milliseconds(61000),
      ok.frames};
  Goroutine receiving{20, "waiting", "chan receive", "chan receive", false, {}, {}};
  r.go_programs = {GoProgram{Pid{42}, "go1.19.8", true, "", 9, {locked, receiving}},
                   GoProgram{Pid{7}, "go1.22.1", false, "not known", 0, {}}};
  r.analysis_time = std::chrono::microseconds(1234);
  return r;
}

void expectSameAsProtobuf(const AnalysisResult& r) {
  const auto fast = nlohmann::json::parse(analysisToJson(r));
  const auto reference = nlohmann::json::parse(toJson(toProto(r)));
  EXPECT_EQ(fast, reference) << "fast:\n" << fast.dump(1) << "\nprotobuf:\n" << reference.dump(1);
}

TEST(JsonWriter, MatchesTheProtobufMappingField4Field) { expectSameAsProtobuf(sample()); }

TEST(JsonWriter, EveryCharacterToEscapeIsEscapedWhereverItIs) {
  // Text is tested eight characters at a time, then one by one: each character that needs
  // escaping (or is not ASCII) at each place of a longer name, in each of those parts.
  std::vector<std::string> specials{"\"", "\\", "\x7f", "\xc3\xa9", "\xe2\x82\xac"};
  for (char c = 0; c < 0x20; ++c) specials.emplace_back(1, c);
  const std::string plain = "abcdefghijklmnopq";
  for (const auto& special : specials) {
    auto r = sample();
    r.warnings.clear();
    for (std::size_t at = 0; at <= plain.size(); ++at) {
      r.warnings.push_back(plain.substr(0, at) + special + plain.substr(at));
    }
    expectSameAsProtobuf(r);
  }
}

TEST(JsonWriter, StreamedTextIsTheTextBuiltInMemory) {
  // Longer than the blocks the stream is written in, with a name longer than one block.
  auto r = sample();
  for (int i = 0; i < 3000; ++i) r.chains.push_back(r.chains[i % 2]);
  r.warnings.push_back(std::string(200'000, 'x') + "\"");
  const auto built = analysisToJson(r);
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  writeAnalysisJson(r, file);
  std::string streamed(static_cast<std::size_t>(std::ftell(file)), '\0');
  std::rewind(file);
  ASSERT_EQ(std::fread(streamed.data(), 1, streamed.size(), file), streamed.size());
  std::fclose(file);
  EXPECT_GT(built.size(), std::size_t{1} << 20);
  EXPECT_TRUE(built == streamed);
  expectSameAsProtobuf(r);
}

TEST(JsonWriter, TimestampsKeepProtobufsPrecisionSteps) {
  auto r = sample();
  const auto base = std::chrono::system_clock::time_point(std::chrono::seconds(1795000000));
  for (auto extra : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(5'000'000),
                     std::chrono::nanoseconds(5'000), std::chrono::nanoseconds(5)}) {
    r.sampled_at = base + std::chrono::duration_cast<std::chrono::system_clock::duration>(extra);
    expectSameAsProtobuf(r);
  }
}

TEST(JsonWriter, EmptyResultStillHasEveryTopLevelField) {
  AnalysisResult r;
  r.sampled_at = std::chrono::system_clock::time_point(std::chrono::seconds(1795000000));
  expectSameAsProtobuf(r);
  const auto j = nlohmann::json::parse(analysisToJson(r));
  for (const char* k : {"pid", "chains", "deadlocks", "captures", "warnings", "thread_count"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
}

/// The domain table of `Enum` and the proto enum `proto` name the same values the same way:
/// each domain value converts to the proto value of its wire name, and every proto value but
/// the UNSPECIFIED one has a domain value.
template <typename Enum, typename ProtoEnum>
void expectTableMatchesProto(const google::protobuf::EnumDescriptor* proto,
                             ProtoEnum (*convert)(Enum)) {
  for (const auto& n : enumNames<Enum>()) {
    const auto* value = proto->FindValueByName(std::string(n.wire));
    ASSERT_NE(value, nullptr) << n.wire << " is not a value of " << proto->full_name();
    EXPECT_EQ(value->number(), convert(n.value)) << n.wire;
    EXPECT_EQ(protoName(n.value), n.wire);
  }
  for (int i = 0; i < proto->value_count(); ++i) {
    const auto* value = proto->value(i);
    if (value->number() == 0) continue;  // UNSPECIFIED: never written
    EXPECT_TRUE(fromWireName<Enum>(value->name()).has_value())
        << value->name() << " has no domain value";
  }
  EXPECT_EQ(static_cast<int>(enumNames<Enum>().size()) + 1, proto->value_count());
}

TEST(JsonWriter, EnumNamesAreTheProtoEnumValueNames) {
  expectTableMatchesProto<ObjectType, v1::ObjectType>(v1::ObjectType_descriptor(), &toProto);
  expectTableMatchesProto<ObjectStatus, v1::ObjectStatus>(v1::ObjectStatus_descriptor(), &toProto);
}

Incident incident(IncidentState state) {
  const auto r = sample();
  Incident i;
  i.id = 12345678901LL;
  i.kind = IncidentKind::kDeadlock;
  i.state = state;
  i.process = ProcessIdentity{Pid{42}, 9876543210ULL};
  i.process_name = "server";
  i.processes = {{i.process, "server"},
                 {ProcessIdentity{Pid{7}, 18446744073709551615ULL}, "peer \"\xff\" 7"}};
  i.target = "db";
  i.signature = "deadlock [42:43] [7:7]";
  i.threads = r.deadlocks[0].threads;
  i.spurs = r.deadlocks[0].spurs;
  i.opened_at = std::chrono::system_clock::time_point(std::chrono::seconds(1795000000));
  i.updated_at = i.opened_at + std::chrono::milliseconds(1500);
  if (state == IncidentState::kResolved) {
    i.resolved_at = i.opened_at + std::chrono::seconds(90);
    i.resolution = "the cycle is gone";
  }
  i.summary = "deadlock of 2 thread(s)";
  i.chains = r.chains;
  i.evidence = r.captures;
  return i;
}

TEST(JsonWriter, IncidentsMatchTheProtobufMapping) {
  const std::vector<Incident> incidents{incident(IncidentState::kOpen),
                                        incident(IncidentState::kResolved)};
  v1::IncidentList list;
  for (const auto& i : incidents) *list.add_incidents() = toProto(i);
  const auto fast = nlohmann::json::parse(incidentsToJson(incidents));
  const auto reference = nlohmann::json::parse(toJson(list));
  EXPECT_EQ(fast, reference) << "fast:\n" << fast.dump(1) << "\nprotobuf:\n" << reference.dump(1);
  EXPECT_FALSE(fast["incidents"][0].contains("resolved_at"));
  ASSERT_EQ(fast["incidents"][0]["processes"].size(), 2U);
  EXPECT_EQ(fast["incidents"][0]["processes"][1]["start_time"], "18446744073709551615");
  EXPECT_EQ(fast["incidents"][1]["state"], "INCIDENT_STATE_RESOLVED");
}

/// Byte strings that are not UTF-8, as prctl(PR_SET_NAME) or a path can hold: a surrogate, an
/// overlong '/', a code point past U+10FFFF, a stray continuation byte, a truncated sequence.
const std::vector<std::string>& illFormed() {
  static const std::vector<std::string> names{"\xed\xa0\x80", "\xc0\xaf", "x\xf4\x90\x80\x80y",
                                              "\xe0\x80\xaf", "\x80",     "name\xe2\x82"};
  return names;
}

TEST(JsonWriter, IllFormedUtf8ComesOutAsProtobufSaysEverywhere) {
  for (const auto& bad : illFormed()) {
    auto r = sample();
    r.process_name = bad;
    for (auto& chain : r.chains) {
      for (auto& node : chain.nodes) {
        node.thread_name += bad;
        node.process_name += bad;
        node.name += bad;
        node.detail += bad;
      }
    }
    r.captures[0].frames[0].function += bad;
    r.captures[0].frames[0].module += bad;
    r.captures[0].frames[0].file += bad;
    r.captures[1].error += bad;
    r.captures[1].note = bad;
    r.warnings.push_back(bad);
    expectSameAsProtobuf(r);

    const auto json = analysisToJson(r);
    EXPECT_TRUE(isValidUtf8(json)) << json;
    // What a proto3 client does with it: parse, and serialize (which checks UTF-8 again).
    v1::AnalyzeResult parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
    EXPECT_EQ(parsed.process_name(), validUtf8(bad));
    EXPECT_EQ(parsed.chains(0).nodes(0).thread_name(), validUtf8("worker \"1\"\n" + bad));
    std::string wire;
    ASSERT_TRUE(parsed.SerializeToString(&wire));
    v1::AnalyzeResult back;
    EXPECT_TRUE(back.ParseFromString(wire));
    ASSERT_EQ(back.warnings_size(), 3);
    EXPECT_EQ(back.warnings(2), validUtf8(bad));
  }
}

TEST(JsonWriter, IllFormedUtf8InIncidentsComesOutAsProtobufSays) {
  for (const auto& bad : illFormed()) {
    auto i = incident(IncidentState::kResolved);
    i.process_name += bad;
    i.processes[1].name += bad;
    i.target += bad;
    i.signature += bad;
    i.resolution += bad;
    i.summary += bad;
    i.chains[0].nodes[0].thread_name += bad;
    v1::IncidentList list;
    *list.add_incidents() = toProto(i);
    const auto fast = incidentsToJson({i});
    EXPECT_TRUE(isValidUtf8(fast));
    EXPECT_EQ(nlohmann::json::parse(fast), nlohmann::json::parse(toJson(list)))
        << "fast:\n"
        << fast << "\nprotobuf:\n"
        << toJson(list);
    EXPECT_EQ(list.incidents(0).target(), validUtf8("db" + bad));
  }
}

}  // namespace
}  // namespace wctmon::wire
