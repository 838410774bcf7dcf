#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace wctmon::wire {

/// Whether `text` is well-formed UTF-8 (Unicode Table 3-7), what proto3 `string` fields and
/// JSON text must be: no overlong forms, no surrogates (U+D800..U+DFFF), nothing past U+10FFFF.
[[nodiscard]] bool isValidUtf8(std::string_view text);

/// `text` with each maximal ill-formed subsequence replaced by U+FFFD, as WHATWG and Unicode's
/// "substitution of maximal subparts" do (and Python's decode(errors="replace")): thread and
/// process names and paths are arbitrary bytes, and one bad byte must not break a proto3
/// client. Well-formed text comes back unchanged.
[[nodiscard]] std::string validUtf8(std::string_view text);

/// What starts at byte `i` (< size) of `text`: a well-formed character (its code point and
/// length), or a maximal ill-formed subpart (no code point, its length; at least 1).
struct Utf8Char {
  std::size_t length = 1;
  std::optional<char32_t> code_point;
};
[[nodiscard]] Utf8Char utf8CharAt(std::string_view text, std::size_t i);

}  // namespace wctmon::wire
