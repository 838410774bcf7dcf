// A strict reader of JSON for the configuration and the targets the API adds: text with a key
// given twice is refused, and each object is read key by key with its type and range checked,
// its unknown keys reported, and every problem collected with its JSON pointer rather than the
// first one thrown.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_error.h"

namespace wctmon {

/// What `j` is, as an error says it: "a string", "an array", "a fractional number".
[[nodiscard]] std::string jsonTypeName(const nlohmann::json& j);

/// Parses `text`, refusing a key given twice in one object: JSON parsers keep one of them
/// silently (nlohmann the last), so a second "targets" would replace the first unseen. Throws
/// nlohmann::json::exception for text that is not JSON (parse_error) or holds a number no double
/// can hold (out_of_range).
[[nodiscard]] nlohmann::json parseWithoutDuplicateKeys(std::string_view text,
                                                       std::vector<ConfigError>& errors);

/// Reads one JSON object at `pointer`, checking types and ranges, collecting every error with
/// its pointer. A key that is absent leaves the value as it was (its default); one that nobody
/// asked for is reported when the reader goes (in a configuration it is a typo).
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& j, std::string pointer, std::vector<ConfigError>& errors);
  ~ObjectReader();
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  /// Whether the value is an object (else that was reported, and nothing is read).
  [[nodiscard]] bool ok() const { return ok_; }
  /// The pointer of `key` of this object.
  [[nodiscard]] std::string child(std::string_view key) const;

  /// The value at `key`, or nullptr when absent (absent means "the default").
  const nlohmann::json* find(std::string_view key);

  /// An integer from `min` to `max`: a fraction, an exponent or more than 64 bits is refused.
  void integer(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max);
  /// An integer from `min` to `max`, kept in an unsigned type.
  template <typename T>
  void unsignedValue(std::string_view key, T& out, std::int64_t min, std::int64_t max) {
    std::int64_t value = static_cast<std::int64_t>(out);
    integer(key, value, min, max);
    out = static_cast<T>(value);
  }
  /// A number of milliseconds from `min` to `max`.
  void milliseconds(std::string_view key, std::chrono::milliseconds& out, std::int64_t min,
                    std::int64_t max);
  void boolean(std::string_view key, bool& out);
  /// A string without NUL, not empty unless `allow_empty`; whether one was read.
  bool string(std::string_view key, std::string& out, bool allow_empty = false);
  /// A string that is one of `allowed`.
  void choice(std::string_view key, std::string& out, const std::vector<std::string>& allowed);

  /// Where this reader reports problems (for a nested object's reader).
  [[nodiscard]] std::vector<ConfigError>& errors() { return errors_; }

  void fail(std::string pointer, std::string reason);

 private:
  const nlohmann::json& json_;
  std::string pointer_;
  std::vector<ConfigError>& errors_;
  std::vector<std::string> known_;
  bool ok_ = false;
};

}  // namespace wctmon
