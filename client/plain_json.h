#pragma once

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>
#include <string>

namespace wctmon::client {

/// `message` as -o json, -o yaml and -o jsonpath show it: the proto3 JSON mapping with the
/// .proto's field names and every field present (times in RFC 3339, durations as "1.5s"), but
/// enum values as the flags spell them (enumWord: "deadlock", "open", "runtime") and 64-bit
/// integers as numbers ("id": 42, where proto3 writes "42"). With
/// `lean` (lists: incidents, ps, targets, watch), the items leave out their empty lists of
/// objects (an incident's `chains`, `evidence`): the service sends those only with one incident
/// whole. -o protojson keeps the exact proto3 mapping for API clients.
[[nodiscard]] nlohmann::ordered_json plainJson(const google::protobuf::Message& message, bool lean);

/// An enum value's name as a flag spells it: without its type's prefix, in lower case, words
/// joined by '-' (INCIDENT_KIND_SERVICE_HUNG of IncidentKind: "service-hung"; TYPE_OPENED of
/// IncidentEvent.Type: "opened"; NOT_SERVING of ServingStatus: "not-serving").
[[nodiscard]] std::string enumWord(const std::string& type_name, const std::string& value_name);

/// `value` as indented JSON (or on one line) that is safe for a terminal: beyond what JSON
/// escapes (C0 controls), DEL, C1 controls and Unicode bidirectional and line controls are
/// written as \u escapes too; ill-formed UTF-8 becomes U+FFFD.
[[nodiscard]] std::string jsonText(const nlohmann::ordered_json& value, bool one_line = false);

/// `text` with every DEL, C1 control and Unicode bidirectional or line control written as a
/// \uXXXX escape: for text that sits inside the quotes of a JSON or YAML string.
[[nodiscard]] std::string escapeInvisible(const std::string& text);

}  // namespace wctmon::client
