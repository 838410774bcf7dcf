#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/jsonpath.h"

namespace wctmon::client {

/// How results are printed (-o).
enum class OutputFormat {
  /// Columns that fit the terminal (not cut when the output is no terminal).
  kTable,
  /// More columns, nothing cut.
  kWide,
  /// The API's messages with enum values as the flags spell them (plainJson).
  kJson,
  kYaml,
  /// "incident/42", "target/web", "process/1234": one name a line, for xargs and loops.
  kName,
  /// A template applied to the JSON (JsonPath).
  kJsonPath,
  /// The exact proto3 JSON mapping (INCIDENT_KIND_DEADLOCK), for API clients.
  kProtoJson,
};

/// What -o, --no-headers and the terminal say about the output.
struct OutputOptions {
  OutputFormat format = OutputFormat::kTable;
  /// With kJsonPath.
  std::optional<JsonPath> jsonpath;
  /// Tables with their header line (--no-headers clears it).
  bool headers = true;
  /// The terminal's width when standard output is one; nothing when it is not (no cutting).
  std::optional<std::size_t> width;
};

/// The words -o takes, as --help and completion show them ("jsonpath=" takes a template).
[[nodiscard]] std::vector<std::string> outputWords();

/// The value of -o as OutputOptions (headers and width left as they are); why not when it is
/// none of outputWords() or its template does not parse.
[[nodiscard]] std::optional<OutputOptions> parseOutput(std::string_view text, std::string& why);

}  // namespace wctmon::client
