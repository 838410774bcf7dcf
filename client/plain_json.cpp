#include "client/plain_json.h"

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>

#include "wire/proto_convert.h"

namespace wctmon::client {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;

/// "IncidentKind" -> "INCIDENT_KIND".
std::string upperSnake(const std::string& camel) {
  std::string out;
  for (std::size_t i = 0; i < camel.size(); ++i) {
    const auto c = static_cast<unsigned char>(camel[i]);
    if (i > 0 && std::isupper(c) != 0 &&
        (std::islower(static_cast<unsigned char>(camel[i - 1])) != 0 ||
         std::isdigit(static_cast<unsigned char>(camel[i - 1])) != 0)) {
      out += '_';
    }
    out += static_cast<char>(std::toupper(c));
  }
  return out;
}

/// A value of enum `type` as the proto3 mapping wrote it (its name, or its number when this
/// build does not know it), as a word.
void wordEnum(nlohmann::ordered_json& value, const EnumDescriptor& type) {
  if (value.is_string()) value = enumWord(type.name(), value.get<std::string>());
}

void simplify(nlohmann::ordered_json& object, const Descriptor& type, bool lean, int depth);

/// A 64-bit integer the proto3 mapping wrote as a string ("42"), as a number: what a count or
/// an id is to jq and to people.
void numberOf(nlohmann::ordered_json& value, bool is_signed) {
  if (!value.is_string()) return;
  const auto& text = value.get_ref<const std::string&>();
  if (is_signed) {
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size()) value = n;
  } else {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size()) value = n;
  }
}

/// One value of `field` (an element, for a repeated field).
void simplifyValue(nlohmann::ordered_json& value, const FieldDescriptor& field, bool lean,
                   int depth) {
  if (field.type() == FieldDescriptor::TYPE_ENUM) {
    wordEnum(value, *field.enum_type());
  } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
    numberOf(value, true);
  } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
    numberOf(value, false);
  } else if (field.type() == FieldDescriptor::TYPE_MESSAGE && value.is_object()) {
    simplify(value, *field.message_type(), lean, depth + 1);
  }
}

void simplify(nlohmann::ordered_json& object, const Descriptor& type, bool lean, int depth) {
  // Timestamps, durations, Struct: their mapping is what API clients and people expect.
  if (type.file()->package() == "google.protobuf") return;
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& field = *type.field(i);
    const auto found = object.find(field.name());
    if (found == object.end()) continue;
    auto& value = *found;
    if (field.is_map()) {
      const FieldDescriptor& mapped = *field.message_type()->map_value();
      for (auto& [key, item] : value.items()) simplifyValue(item, mapped, lean, depth);
    } else if (field.is_repeated()) {
      for (auto& item : value) simplifyValue(item, field, lean, depth);
      // An item of a list without its empty lists of objects ("chains": []).
      if (lean && depth >= 1 && value.empty() && field.type() == FieldDescriptor::TYPE_MESSAGE) {
        object.erase(found);
      }
    } else {
      simplifyValue(value, field, lean, depth);
    }
  }
}

/// The code point at `text[at]` and the length of its UTF-8 sequence (valid UTF-8 assumed:
/// nlohmann's dump replaced what was not).
std::pair<std::uint32_t, std::size_t> codePoint(const std::string& text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t length = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
  if (length == 1 || at + length > text.size()) return {lead, 1};
  std::uint32_t code = lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    code = (code << 6) | (static_cast<unsigned char>(text[at + k]) & 0x3f);
  }
  return {code, length};
}

bool invisible(std::uint32_t code) {
  return code == 0x7f || (code >= 0x80 && code <= 0x9f) || code == 0x061c ||
         (code >= 0x200e && code <= 0x200f) || (code >= 0x2028 && code <= 0x202e) ||
         (code >= 0x2066 && code <= 0x2069) || code == 0xfeff;
}

}  // namespace

std::string enumWord(const std::string& type_name, const std::string& value_name) {
  const std::string prefix = upperSnake(type_name) + "_";
  std::string word = value_name.rfind(prefix, 0) == 0 && value_name.size() > prefix.size()
                         ? value_name.substr(prefix.size())
                         : value_name;
  for (auto& c : word) {
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return word;
}

nlohmann::ordered_json plainJson(const google::protobuf::Message& message, bool lean) {
  auto json = nlohmann::ordered_json::parse(wire::toJson(message, false));
  simplify(json, *message.GetDescriptor(), lean, 0);
  return json;
}

std::string escapeInvisible(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const auto [code, length] = codePoint(text, at);
    if (invisible(code)) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(code));
      out += buf;
    } else {
      out.append(text, at, length);
    }
    at += length;
  }
  return out;
}

std::string jsonText(const nlohmann::ordered_json& value, bool one_line) {
  // Outside strings JSON has only ASCII punctuation: escaping the whole text touches strings only.
  return escapeInvisible(
      value.dump(one_line ? -1 : 2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace wctmon::client
