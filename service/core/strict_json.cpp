// The strict JSON reader of the configuration: a parse that refuses a key given twice, with the
// pointer of each, and the checked reading of one object's keys.
#include "core/strict_json.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wctmon {
namespace {

using nlohmann::json;

/// `key` as a JSON pointer's reference token: ~ -> ~0, / -> ~1.
std::string pointerToken(std::string_view key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace

std::string jsonTypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a fractional number";
    default:
      return "a number";
  }
}

json parseWithoutDuplicateKeys(std::string_view text, std::vector<ConfigError>& errors) {
  struct Container {
    bool object = false;
    std::vector<std::string> keys;
    std::size_t next_index = 0;
    std::string pointer;
  };
  std::vector<Container> open;
  // The pointer of the value that starts now: the last key of an object, the next index of an
  // array.
  const auto element = [&]() -> std::string {
    if (open.empty()) return "";
    const auto& parent = open.back();
    return parent.pointer + "/" +
           (parent.object ? pointerToken(parent.keys.back()) : std::to_string(parent.next_index));
  };
  const auto completed = [&] {
    if (!open.empty() && !open.back().object) ++open.back().next_index;
  };
  const json::parser_callback_t callback = [&](int /*depth*/, json::parse_event_t event,
                                               json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open.push_back({event == json::parse_event_t::object_start, {}, 0, element()});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        completed();
        break;
      case json::parse_event_t::key: {
        auto& keys = open.back().keys;
        auto key = parsed.get<std::string>();
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
          errors.push_back(ConfigError{open.back().pointer + "/" + pointerToken(key),
                                       "given twice in one object: only one would count"});
        }
        keys.push_back(std::move(key));
        break;
      }
      case json::parse_event_t::value:
        completed();
        break;
    }
    return true;
  };
  return json::parse(text, callback);
}

ObjectReader::ObjectReader(const json& j, std::string pointer, std::vector<ConfigError>& errors)
    : json_(j), pointer_(std::move(pointer)), errors_(errors) {
  ok_ = j.is_object();
  if (!ok_) fail(pointer_, "must be an object, not " + jsonTypeName(j));
}

ObjectReader::~ObjectReader() {
  if (!ok_) return;
  for (const auto& [key, value] : json_.items()) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
      fail(child(key), "unknown key");
    }
  }
}

std::string ObjectReader::child(std::string_view key) const {
  return pointer_ + "/" + pointerToken(key);
}

const json* ObjectReader::find(std::string_view key) {
  known_.emplace_back(key);
  if (!ok_) return nullptr;
  auto it = json_.find(std::string(key));
  return it == json_.end() ? nullptr : &*it;
}

void ObjectReader::integer(std::string_view key, std::int64_t& out, std::int64_t min,
                           std::int64_t max) {
  const json* v = find(key);
  if (v == nullptr) return;
  if (!v->is_number()) {
    fail(child(key), "must be an integer, not " + jsonTypeName(*v));
    return;
  }
  const std::string expected =
      "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
  // JSON reads 1e3 and 1000.0 as fractional numbers, and integers beyond 64 bits too: all are
  // refused, saying what is allowed rather than what the parser made of them.
  if (v->is_number_float()) {
    const double value = v->get<double>();
    const bool whole_in_range = std::trunc(value) == value && value >= static_cast<double>(min) &&
                                value <= static_cast<double>(max);
    fail(child(key), expected + (whole_in_range ? ", written without a fraction or exponent" : "") +
                         " (got " + v->dump() + ")");
    return;
  }
  if (v->is_number_unsigned() &&
      v->get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(child(key), expected + " (got " + v->dump() + ")");
    return;
  }
  const auto value = v->get<std::int64_t>();
  if (value < min || value > max) {
    fail(child(key), expected + " (got " + std::to_string(value) + ")");
    return;
  }
  out = value;
}

void ObjectReader::milliseconds(std::string_view key, std::chrono::milliseconds& out,
                                std::int64_t min, std::int64_t max) {
  std::int64_t value = out.count();
  integer(key, value, min, max);
  out = std::chrono::milliseconds(value);
}

void ObjectReader::boolean(std::string_view key, bool& out) {
  const json* v = find(key);
  if (v == nullptr) return;
  if (!v->is_boolean()) {
    fail(child(key), "must be true or false, not " + jsonTypeName(*v));
    return;
  }
  out = v->get<bool>();
}

bool ObjectReader::string(std::string_view key, std::string& out, bool allow_empty) {
  const json* v = find(key);
  if (v == nullptr) return false;
  if (!v->is_string()) {
    fail(child(key), "must be a string, not " + jsonTypeName(*v));
    return false;
  }
  auto value = v->get<std::string>();
  if (value.empty() && !allow_empty) {
    fail(child(key), "must not be empty");
    return false;
  }
  // A NUL ends the string for every system call it reaches (a path would be cut short).
  if (value.find('\0') != std::string::npos) {
    fail(child(key), "must not contain a NUL character (\\u0000)");
    return false;
  }
  out = std::move(value);
  return true;
}

void ObjectReader::choice(std::string_view key, std::string& out,
                          const std::vector<std::string>& allowed) {
  std::string value = out;
  if (!string(key, value)) return;
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(child(key), "must be one of " + list + " (got \"" + value + "\")");
    return;
  }
  out = value;
}

void ObjectReader::fail(std::string pointer, std::string reason) {
  errors_.push_back(ConfigError{std::move(pointer), std::move(reason)});
}

}  // namespace wctmon
