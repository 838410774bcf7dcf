// The strict JSON reader on its own: a key given twice found with its pointer wherever it is, and
// one object read key by key, each value checked and every problem collected with its pointer.
#include "core/strict_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace wctmon {
namespace {

using nlohmann::json;

std::vector<std::string> texts(const std::vector<ConfigError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.toString());
  return out;
}

TEST(StrictJson, AKeyGivenTwiceIsFoundByItsPointerWithTheKeyEscaped) {
  std::vector<ConfigError> errors;
  const auto j = parseWithoutDuplicateKeys(
      R"({"a": {"x/y~": 1, "x/y~": 2}, "b": [1, {"k": 1}, {"k": 1, "k": 2}], "k": 0})", errors);
  EXPECT_EQ(texts(errors),
            (std::vector<std::string>{"/a/x~1y~0: given twice in one object: only one would count",
                                      "/b/2/k: given twice in one object: only one would count"}));
  EXPECT_EQ(j["b"][2]["k"], 2);  // what the parser kept: the last
  errors.clear();
  EXPECT_NO_THROW(static_cast<void>(parseWithoutDuplicateKeys("[1, [2, 3], {}]", errors)));
  EXPECT_TRUE(errors.empty());
}

TEST(StrictJson, TextThatIsNotJsonOrANumberNoDoubleHoldsThrows) {
  std::vector<ConfigError> errors;
  EXPECT_THROW(static_cast<void>(parseWithoutDuplicateKeys("{\"a\": ", errors)), json::exception);
  EXPECT_THROW(static_cast<void>(parseWithoutDuplicateKeys("[8e400000]", errors)), json::exception);
}

TEST(StrictJson, TypesAreNamedAsAnErrorSaysThem) {
  EXPECT_EQ(jsonTypeName(json(nullptr)), "null");
  EXPECT_EQ(jsonTypeName(json(true)), "a boolean");
  EXPECT_EQ(jsonTypeName(json("x")), "a string");
  EXPECT_EQ(jsonTypeName(json::array()), "an array");
  EXPECT_EQ(jsonTypeName(json::object()), "an object");
  EXPECT_EQ(jsonTypeName(json(1.5)), "a fractional number");
  EXPECT_EQ(jsonTypeName(json(-3)), "a number");
  EXPECT_EQ(jsonTypeName(json(3U)), "a number");
}

TEST(StrictJson, AReaderChecksEachKeyAndReportsTheOnesNobodyAskedFor) {
  std::vector<ConfigError> errors;
  const auto j = json::parse(R"({"n": 5, "far": 500, "frac": 1e1, "big": 18446744073709551615,
                                 "flag": 1, "s": "a\u0000b", "empty": "", "pick": "c",
                                 "ms": 20, "typo": 0})");
  std::int64_t n = 0;
  std::int64_t far = 7;
  std::int64_t frac = 7;
  std::int64_t big = 7;
  unsigned small = 3;
  bool flag = false;
  std::string s = "kept";
  std::string empty = "kept";
  std::string pick = "a";
  std::chrono::milliseconds ms{1};
  {
    ObjectReader r(j, "/x", errors);
    ASSERT_TRUE(r.ok());
    r.integer("n", n, 0, 10);
    r.integer("far", far, 0, 100);
    r.integer("frac", frac, 0, 100);
    r.integer("big", big, 0, 100);
    r.unsignedValue("absent", small, 0, 10);
    r.boolean("flag", flag);
    EXPECT_FALSE(r.string("s", s));
    EXPECT_FALSE(r.string("empty", empty));
    r.choice("pick", pick, {"a", "b"});
    r.milliseconds("ms", ms, 0, 100);
    EXPECT_EQ(r.child("a/b"), "/x/a~1b");
  }  // "typo" is reported as the reader goes
  EXPECT_EQ(n, 5);
  EXPECT_EQ(ms, std::chrono::milliseconds(20));
  // What was refused or absent keeps its value.
  EXPECT_EQ(far, 7);
  EXPECT_EQ(frac, 7);
  EXPECT_EQ(big, 7);
  EXPECT_EQ(small, 3U);
  EXPECT_FALSE(flag);
  EXPECT_EQ(s, "kept");
  EXPECT_EQ(empty, "kept");
  EXPECT_EQ(pick, "a");
  EXPECT_EQ(texts(errors),
            (std::vector<std::string>{
                "/x/far: must be an integer from 0 to 100 (got 500)",
                "/x/frac: must be an integer from 0 to 100, written without a fraction or "
                "exponent (got 10.0)",
                "/x/big: must be an integer from 0 to 100 (got 18446744073709551615)",
                "/x/flag: must be true or false, not a number",
                "/x/s: must not contain a NUL character (\\u0000)",
                "/x/empty: must not be empty",
                "/x/pick: must be one of a, b (got \"c\")",
                "/x/typo: unknown key",
            }));
}

TEST(StrictJson, AReaderOfAValueThatIsNoObjectSaysSoOnceAndReadsNothing) {
  std::vector<ConfigError> errors;
  {
    ObjectReader r(json::array(), "/list", errors);
    EXPECT_FALSE(r.ok());
    bool flag = false;
    r.boolean("flag", flag);
    EXPECT_EQ(r.find("flag"), nullptr);
  }
  EXPECT_EQ(texts(errors), std::vector<std::string>{"/list: must be an object, not an array"});
}

}  // namespace
}  // namespace wctmon
