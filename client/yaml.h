#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace wctmon::client {

/// `value` as a YAML document (block style, as kubectl writes it: a list under its key, unindented
/// dashes). Strings are plain where YAML reads them back as the same string, double-quoted
/// otherwise ("42", "yes", "unix:/run/wctmon/api.sock" stays plain, "a: b" does not); control
/// and bidirectional characters are escaped, as jsonText does.
[[nodiscard]] std::string toYaml(const nlohmann::ordered_json& value);

}  // namespace wctmon::client
