#include "client/plain_json.h"

#include <gtest/gtest.h>

#include "grpc/health/v1/health.pb.h"
#include "wctmon/v1/monitor.pb.h"

namespace wctmon::client {
namespace {

v1::Incident incident(std::int64_t id) {
  v1::Incident i;
  i.set_id(id);
  i.set_kind(v1::INCIDENT_KIND_SERVICE_HUNG);
  i.set_state(v1::INCIDENT_STATE_OPEN);
  i.set_pid(42);
  i.set_process_start_time(9007199254740993ULL);
  i.add_threads()->set_tid(43);
  i.mutable_opened_at()->set_seconds(1795773601);
  return i;
}

TEST(PlainJson, EnumValuesAreTheWordsOfTheFlags) {
  EXPECT_EQ(enumWord("IncidentKind", "INCIDENT_KIND_DEADLOCK"), "deadlock");
  EXPECT_EQ(enumWord("IncidentKind", "INCIDENT_KIND_SERVICE_HUNG"), "service-hung");
  EXPECT_EQ(enumWord("Type", "TYPE_OPENED"), "opened");
  EXPECT_EQ(enumWord("ObjectType", "OBJECT_TYPE_RW_LOCK"), "rw-lock");
  EXPECT_EQ(enumWord("ServingStatus", "NOT_SERVING"), "not-serving");
  EXPECT_EQ(enumWord("TargetOrigin", "TARGET_ORIGIN_RUNTIME"), "runtime");

  const auto j = plainJson(incident(7), false);
  EXPECT_EQ(j["kind"], "service-hung");
  EXPECT_EQ(j["state"], "open");
  v1::IncidentEvent event;
  event.set_type(v1::IncidentEvent::TYPE_EXISTING);
  *event.mutable_incident() = incident(7);
  EXPECT_EQ(plainJson(event, true)["type"], "existing");
  grpc::health::v1::HealthCheckResponse health;
  health.set_status(grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(plainJson(health, false)["status"], "serving");
  // Inside maps and lists of objects too.
  v1::ServiceStatus status;
  status.add_open_incidents()->set_kind(v1::INCIDENT_KIND_HANG);
  EXPECT_EQ(plainJson(status, false)["open_incidents"][0]["kind"], "hang");
}

TEST(PlainJson, SixtyFourBitIntegersAreNumbersAndTimesStayRfc3339) {
  const auto j = plainJson(incident(7), false);
  EXPECT_EQ(j["id"], 7);
  EXPECT_TRUE(j["id"].is_number_integer());
  EXPECT_EQ(j["process_start_time"].get<std::uint64_t>(), 9007199254740993ULL);
  EXPECT_EQ(j["pid"], 42);
  EXPECT_EQ(j["opened_at"], "2026-11-27T10:00:01Z");
  // Every field there, in the .proto's order and names.
  EXPECT_EQ(j.begin().key(), "id");
  EXPECT_EQ(j["summary"], "");
  EXPECT_TRUE(j.contains("chains"));
}

TEST(PlainJson, ItemsOfAListLeaveOutTheirEmptyListsOfObjects) {
  v1::ListIncidentsResponse list;
  *list.add_incidents() = incident(2);
  auto* with_chain = list.add_incidents();
  *with_chain = incident(1);
  with_chain->add_chains()->set_pid(42);
  const auto lean = plainJson(list, true);
  EXPECT_FALSE(lean["incidents"][0].contains("chains")) << lean.dump();
  EXPECT_FALSE(lean["incidents"][0].contains("evidence"));
  EXPECT_FALSE(lean["incidents"][0].contains("spurs"));
  EXPECT_EQ(lean["incidents"][1]["chains"].size(), 1U);
  // Lists of words stay; the top level keeps its own, empty or not.
  EXPECT_TRUE(lean["incidents"][0].contains("threads"));
  EXPECT_EQ(plainJson(v1::ListIncidentsResponse(), true)["incidents"],
            nlohmann::ordered_json::array());
  v1::ListTargetsResponse targets;
  targets.add_targets()->set_name("t");
  EXPECT_EQ(plainJson(targets, true)["targets"][0]["ignore_waits"],
            nlohmann::ordered_json::array());
  // Not a list: every field.
  EXPECT_TRUE(plainJson(list, false)["incidents"][0].contains("chains"));
}

TEST(PlainJson, TheTextIsSafeForATerminal) {
  const auto text =
      jsonText(nlohmann::ordered_json{{"name",
                                       "a\x1b]0;pwn\x07 \xc2\x9b"
                                       "31m \xe2\x80\xae \xe2\x80\xa8 \x7f caf\xc3\xa9"}});
  EXPECT_EQ(
      text,
      "{\n  \"name\": \"a\\u001b]0;pwn\\u0007 \\u009b31m \\u202e \\u2028 \\u007f caf\xc3\xa9\"\n}");
  EXPECT_EQ(jsonText(nlohmann::ordered_json{{"a", 1}}, true), R"({"a":1})");
  // Ill-formed UTF-8 cannot be written as JSON: replaced.
  EXPECT_EQ(jsonText(nlohmann::ordered_json("x\xffy"), true), "\"x\xef\xbf\xbdy\"");
}

}  // namespace
}  // namespace wctmon::client
