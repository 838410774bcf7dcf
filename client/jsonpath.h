#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wctmon::client {

/// A template of -o jsonpath=...: kubectl's syntax, the part of it that reads a JSON document.
/// Text outside braces is written as it is; inside braces:
///   {.status.healthy}            a field; `$` or `@` before the first dot is allowed
///   {.incidents[0].id}           an element; [-1] the last one; [1:3] a slice; [0,2] a union
///   {.incidents[*].id}           every element (or every field of an object: .*)
///   {..pid}                      every field of that name, at any depth
///   {['a-key']}                  a field whose name is not a word
///   {.incidents[?(@.kind=="deadlock")].id}  elements whose field compares (== != < <= > >=)
///                                to a number, a 'string', "string", true, false or null, or
///                                elements that have the field: [?(@.dump)]
///   {range .incidents[*]}{.id}{"\n"}{end}   the text between, once for each result
///   {"\t"}                       a string: \n, \t, \r, \", \\ escaped
/// A template without a brace is one expression: `.incidents[*].id`. Several results are written
/// separated by spaces; strings as they are, anything else as compact JSON; a field that is not
/// there yields nothing.
class JsonPath {
 public:
  /// The template, or why it cannot be read (a message naming the position).
  [[nodiscard]] static std::variant<JsonPath, std::string> parse(std::string_view text);

  /// The template applied to `document`. Each value written passes through `value_text` (to make
  /// what the service sent safe for a terminal); the template's own text does not.
  [[nodiscard]] std::string render(
      const nlohmann::ordered_json& document,
      const std::function<std::string(const std::string&)>& value_text = {}) const;

  struct Node;

 private:
  explicit JsonPath(std::vector<std::shared_ptr<const Node>> nodes) : nodes_(std::move(nodes)) {}
  std::vector<std::shared_ptr<const Node>> nodes_;
};

}  // namespace wctmon::client
