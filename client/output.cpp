#include "client/output.h"

#include <utility>

namespace wctmon::client {
namespace {

constexpr std::pair<std::string_view, OutputFormat> kFormats[] = {
    {"table", OutputFormat::kTable}, {"wide", OutputFormat::kWide},
    {"json", OutputFormat::kJson},   {"yaml", OutputFormat::kYaml},
    {"name", OutputFormat::kName},   {"protojson", OutputFormat::kProtoJson}};

constexpr std::string_view kJsonPathPrefix = "jsonpath=";

}  // namespace

std::vector<std::string> outputWords() {
  std::vector<std::string> words;
  for (const auto& [word, format] : kFormats) words.emplace_back(word);
  words.emplace_back(kJsonPathPrefix);
  return words;
}

std::optional<OutputOptions> parseOutput(std::string_view text, std::string& why) {
  OutputOptions options;
  if (text.rfind(kJsonPathPrefix, 0) == 0) {
    auto parsed = JsonPath::parse(text.substr(kJsonPathPrefix.size()));
    if (auto* error = std::get_if<std::string>(&parsed)) {
      why = "jsonpath: " + *error;
      return std::nullopt;
    }
    options.format = OutputFormat::kJsonPath;
    options.jsonpath = std::get<JsonPath>(std::move(parsed));
    return options;
  }
  for (const auto& [word, format] : kFormats) {
    if (text == word) {
      options.format = format;
      return options;
    }
  }
  why = "expected table, wide, json, yaml, name, jsonpath=TEMPLATE or protojson";
  return std::nullopt;
}

}  // namespace wctmon::client
