#include "client/output.h"

#include <gtest/gtest.h>

namespace wctmon::client {
namespace {

TEST(Output, EveryFormatByItsWord) {
  std::string why;
  for (const auto& [word, format] : std::vector<std::pair<std::string, OutputFormat>>{
           {"table", OutputFormat::kTable},
           {"wide", OutputFormat::kWide},
           {"json", OutputFormat::kJson},
           {"yaml", OutputFormat::kYaml},
           {"name", OutputFormat::kName},
           {"protojson", OutputFormat::kProtoJson},
           {"jsonpath={.a}", OutputFormat::kJsonPath}}) {
    const auto parsed = parseOutput(word, why);
    ASSERT_TRUE(parsed.has_value()) << word << ": " << why;
    EXPECT_EQ(parsed->format, format) << word;
  }
  EXPECT_EQ(outputWords(), (std::vector<std::string>{"table", "wide", "json", "yaml", "name",
                                                     "protojson", "jsonpath="}));
}

TEST(Output, AnUnknownWordOrABadTemplateSaysWhy) {
  std::string why;
  EXPECT_FALSE(parseOutput("xml", why).has_value());
  EXPECT_EQ(why, "expected table, wide, json, yaml, name, jsonpath=TEMPLATE or protojson");
  EXPECT_FALSE(parseOutput("jsonpath={.a", why).has_value());
  EXPECT_EQ(why, "jsonpath: no '}' closes the '{' at column 1");
}

}  // namespace
}  // namespace wctmon::client
