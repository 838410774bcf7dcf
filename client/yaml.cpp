#include "client/yaml.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "client/plain_json.h"
#include "model/format.h"

namespace wctmon::client {
namespace {

/// Words YAML 1.1 readers take for booleans or null when plain.
bool reserved(std::string_view text) {
  static constexpr std::array<std::string_view, 12> kWords = {
      "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf"};
  return std::find(kWords.begin(), kWords.end(), asciiLower(text)) != kWords.end();
}

/// Whether `text` can be written plain: it starts with a letter, '/' or '_' (never a number, a
/// date or an indicator), holds only letters, digits, spaces and -_./@+,()= with ':' only
/// inside a word (a URL, "unix:/path"), no trailing space, and is no reserved word.
bool plain(const std::string& text) {
  if (text.empty() || reserved(text) || text.back() == ' ') return false;
  const auto first = static_cast<unsigned char>(text[0]);
  if (std::isalpha(first) == 0 && first != '/' && first != '_') return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isalnum(c) != 0 ||
        std::string_view(" -_./@+,()=").find(static_cast<char>(c)) != std::string_view::npos) {
      continue;
    }
    if (c == ':' && i + 1 < text.size() && text[i + 1] != ' ') continue;
    return false;
  }
  return true;
}

std::string scalar(const nlohmann::ordered_json& value) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    // A JSON string is a YAML double-quoted scalar: the same escapes.
    return plain(text) ? text : jsonText(value, true);
  }
  return value.dump();
}

bool inlineValue(const nlohmann::ordered_json& value) {
  return !value.is_structured() || value.empty();
}

std::string key(const std::string& name) { return plain(name) ? name : jsonText(name, true); }

void emit(std::string& out, const nlohmann::ordered_json& value, std::size_t indent);

/// The entries of an object, the first one already indented by the caller (after "- ").
void emitObject(std::string& out, const nlohmann::ordered_json& object, std::size_t indent,
                bool first_indented) {
  bool first = true;
  for (const auto& [name, item] : object.items()) {
    if (!(first && first_indented)) out += std::string(indent, ' ');
    first = false;
    out += key(name) + ":";
    if (inlineValue(item)) {
      out += " " + (item.is_object() ? "{}" : item.is_array() ? "[]" : scalar(item)) + "\n";
    } else {
      out += "\n";
      // A list under its key at the key's indent, as kubectl writes it; an object one deeper.
      emit(out, item, item.is_array() ? indent : indent + 2);
    }
  }
}

void emit(std::string& out, const nlohmann::ordered_json& value, std::size_t indent) {
  if (value.is_object()) {
    emitObject(out, value, indent, false);
    return;
  }
  for (const auto& item : value) {
    out += std::string(indent, ' ') + "-";
    if (inlineValue(item)) {
      out += " " + (item.is_object() ? "{}" : item.is_array() ? "[]" : scalar(item)) + "\n";
    } else if (item.is_object()) {
      out += " ";
      emitObject(out, item, indent + 2, true);
    } else {
      out += "\n";
      emit(out, item, indent + 2);
    }
  }
}

}  // namespace

std::string toYaml(const nlohmann::ordered_json& value) {
  if (inlineValue(value)) {
    return (value.is_object() ? "{}" : value.is_array() ? "[]" : scalar(value)) + "\n";
  }
  std::string out;
  emit(out, value, 0);
  return out;
}

}  // namespace wctmon::client
