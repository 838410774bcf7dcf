#include "client/jsonpath.h"

#include <gtest/gtest.h>

namespace wctmon::client {
namespace {

using json = nlohmann::ordered_json;

const json& document() {
  static const json doc = json::parse(R"({
    "incidents": [
      {"id": 3, "kind": "deadlock", "state": "open", "pid": 30, "threads": [{"tid": 31}, {"tid": 32}],
       "dump": {"path": "/d/3.core"}},
      {"id": 2, "kind": "hang", "state": "resolved", "pid": 20, "threads": [{"tid": 21}]},
      {"id": 1, "kind": "deadlock", "state": "resolved", "pid": 10, "threads": [{"tid": 11}],
       "label": "x y"}],
    "status": {"healthy": true, "version": "0.1.0", "big": "9007199254740993"},
    "a-key": "dashed", "next_page_token": ""})");
  return doc;
}

/// The template applied to document(); a test failure (and "") when it does not parse.
std::string render(const std::string& text) {
  auto parsed = JsonPath::parse(text);
  if (const auto* why = std::get_if<std::string>(&parsed)) {
    ADD_FAILURE() << text << ": " << *why;
    return "";
  }
  return std::get<JsonPath>(parsed).render(document());
}

std::string errorOf(const std::string& text) {
  const auto parsed = JsonPath::parse(text);
  const auto* why = std::get_if<std::string>(&parsed);
  return why == nullptr ? "(parsed)" : *why;
}

TEST(JsonPath, FieldsElementsAndWildcardsAsKubectlWritesThem) {
  EXPECT_EQ(render("{.status.healthy}"), "true");
  EXPECT_EQ(render("{$.status.version}"), "0.1.0");
  EXPECT_EQ(render("{.incidents[*].id}"), "3 2 1");
  EXPECT_EQ(render("{.incidents[0].kind}"), "deadlock");
  EXPECT_EQ(render("{.incidents[-1].id}"), "1");
  EXPECT_EQ(render("{.incidents[0,2].pid}"), "30 10");
  EXPECT_EQ(render("{.incidents[1:].id}"), "2 1");
  EXPECT_EQ(render("{.incidents[:1].id}"), "3");
  EXPECT_EQ(render("{.incidents[*].threads[*].tid}"), "31 32 21 11");
  EXPECT_EQ(render("{.status.*}"), "true 0.1.0 9007199254740993");
  EXPECT_EQ(render("{..tid}"), "31 32 21 11");
  EXPECT_EQ(render("{['a-key']}"), "dashed");
  EXPECT_EQ(render("{.a-key}"), "dashed");
  // Objects and arrays as compact JSON; strings as they are.
  EXPECT_EQ(render("{.incidents[0].dump}"), R"({"path":"/d/3.core"})");
  EXPECT_EQ(render("{.incidents[2].label}"), "x y");
  EXPECT_EQ(render("{.next_page_token}"), "");
}

TEST(JsonPath, FiltersCompareFieldsToLiterals) {
  EXPECT_EQ(render(R"({.incidents[?(@.kind=="deadlock")].id})"), "3 1");
  EXPECT_EQ(render("{.incidents[?(@.kind != 'deadlock')].id}"), "2");
  EXPECT_EQ(render("{.incidents[?(@.pid > 15)].id}"), "3 2");
  EXPECT_EQ(render("{.incidents[?(@.pid<=20)].id}"), "2 1");
  EXPECT_EQ(render("{.incidents[?(@.dump)].id}"), "3");
  EXPECT_EQ(render("{.incidents[?(@.dump.path=='/d/3.core')].pid}"), "30");
  // A number held in a string (an int64 of the proto3 mapping) compares as a number.
  EXPECT_EQ(render("{.status[?(@ == 9007199254740993)]}"), "9007199254740993");
}

TEST(JsonPath, RangeRepeatsItsBodyAndStringsSayWhitespace) {
  EXPECT_EQ(render(R"({range .incidents[*]}{.id}{"\t"}{.kind}{"\n"}{end})"),
            "3\tdeadlock\n2\thang\n1\tdeadlock\n");
  EXPECT_EQ(render("ids: {range .incidents[?(@.state=='resolved')]}[{.id}]{end}."), "ids: [2][1].");
  EXPECT_EQ(render(R"({range .incidents[*]}{.id}:{range .threads[*]} {.tid}{end};{end})"),
            "3: 31 32;2: 21;1: 11;");
  // $ inside a range is the document.
  EXPECT_EQ(render("{range .incidents[0:1]}{$.status.version}{end}"), "0.1.0");
}

TEST(JsonPath, WithoutBracesTheTemplateIsOneExpression) {
  EXPECT_EQ(render(".incidents[*].kind"), "deadlock hang deadlock");
}

TEST(JsonPath, AFieldThatIsNotThereYieldsNothing) {
  EXPECT_EQ(render("{.nope}"), "");
  EXPECT_EQ(render("[{.incidents[9].id}{.status.healthy.deeper}]"), "[]");
}

TEST(JsonPath, ValuesPassThroughTheFilterTheTemplateDoesNot) {
  auto parsed = JsonPath::parse(R"({"\t"}{.a}{"\n"})");
  ASSERT_TRUE(std::holds_alternative<JsonPath>(parsed));
  const auto out = std::get<JsonPath>(parsed).render(
      json::parse(R"({"a": "x\ty"})"), [](const std::string& v) { return "<" + v + ">"; });
  EXPECT_EQ(out, "\t<x\ty>\n");
}

TEST(JsonPath, ErrorsNameWhereTheTemplateGoesWrong) {
  EXPECT_EQ(errorOf("{.incidents[*].id"), "no '}' closes the '{' at column 1");
  EXPECT_EQ(errorOf("x {.a[} y"), "expected *, a number, a 'name' or ?(...) at column 7");
  EXPECT_EQ(errorOf("{.a[?(x)]}"), "a filter starts with @ at column 7");
  EXPECT_EQ(errorOf("{.a[?(@.b == )]}"),
            "expected a number, a string, true, false or null at column 14");
  EXPECT_EQ(errorOf("{range .a}{.b}"), "a {range} without its {end}");
  EXPECT_EQ(errorOf("{.a}{end}"), "{end} without a {range} at column 9");
  EXPECT_EQ(errorOf("{.a b}"), "unexpected ' ' at column 4");
  EXPECT_EQ(errorOf(".a["), "expected *, a number, a 'name' or ?(...) at column 4");
}

}  // namespace
}  // namespace wctmon::client
