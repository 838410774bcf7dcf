#include "client/yaml.h"

#include <gtest/gtest.h>

namespace wctmon::client {
namespace {

using json = nlohmann::ordered_json;

TEST(Yaml, ObjectsNestAndListsSitUnderTheirKeyAsKubectlWritesThem) {
  const auto doc = json::parse(R"({
    "incidents": [{"id": 42, "kind": "deadlock", "threads": [{"pid": 1, "tid": 2}],
                   "dump": {"path": "/var/lib/wctmon/dumps/a.core"}}],
    "empty_list": [], "empty_object": {}, "healthy": true, "nothing": null, "ratio": 0.5})");
  EXPECT_EQ(toYaml(doc), R"(incidents:
- id: 42
  kind: deadlock
  threads:
  - pid: 1
    tid: 2
  dump:
    path: /var/lib/wctmon/dumps/a.core
empty_list: []
empty_object: {}
healthy: true
nothing: null
ratio: 0.5
)");
}

TEST(Yaml, StringsAreQuotedWhereAReaderWouldTakeThemForSomethingElse) {
  const auto yaml = [](const std::string& text) { return toYaml(json(text)); };
  EXPECT_EQ(yaml("deadlock"), "deadlock\n");
  EXPECT_EQ(yaml("unix:/run/wctmon/api.sock"), "unix:/run/wctmon/api.sock\n");
  EXPECT_EQ(yaml("two words, (and more)"), "two words, (and more)\n");
  // Numbers, booleans and null of YAML 1.1, dates, indicators, ": " and " #", edges.
  for (const std::string text : {"42",
                                 "1.5",
                                 "-3",
                                 "yes",
                                 "No",
                                 "on",
                                 "OFF",
                                 "true",
                                 "null",
                                 "~",
                                 "2026-11-27T10:00:00Z",
                                 "",
                                 " lead",
                                 "trail ",
                                 "a: b",
                                 "a #b",
                                 "end:",
                                 "*alias",
                                 "&anchor",
                                 "!tag",
                                 "- item",
                                 "[x]",
                                 "{x}",
                                 "'q'",
                                 "\"q\"",
                                 "%x",
                                 "@x",
                                 "`x",
                                 "|x",
                                 ">x",
                                 "?x",
                                 ",x"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(yaml(text), json(text).dump() + "\n");
  }
  // A newline or a control character is escaped, never raw.
  EXPECT_EQ(yaml("a\nb"), "\"a\\nb\"\n");
  EXPECT_EQ(yaml("x\x1b[2Jy"), "\"x\\u001b[2Jy\"\n");
  EXPECT_EQ(yaml("\xe2\x80\xae"
                 "evil"),
            "\"\\u202eevil\"\n");
  EXPECT_EQ(yaml("\xc2\x9b"
                 "31m"),
            "\"\\u009b31m\"\n");
  // Other characters outside ASCII stay as they are, inside quotes.
  EXPECT_EQ(yaml("caf\xc3\xa9"), "\"caf\xc3\xa9\"\n");
}

TEST(Yaml, KeysThatAreNoWordsAreQuotedToo) {
  EXPECT_EQ(toYaml(json::parse(R"({"capture.enabled": "x", "a b": 1, "yes": 2, "1": 3})")),
            "capture.enabled: x\na b: 1\n\"yes\": 2\n\"1\": 3\n");
}

TEST(Yaml, ListsOfListsAndScalarsAtTheTop) {
  EXPECT_EQ(toYaml(json::parse("[[1, 2], [], {}, {\"a\": [3]}]")),
            "-\n  - 1\n  - 2\n- []\n- {}\n- a:\n  - 3\n");
  EXPECT_EQ(toYaml(json(7)), "7\n");
  EXPECT_EQ(toYaml(json::array()), "[]\n");
}

}  // namespace
}  // namespace wctmon::client
