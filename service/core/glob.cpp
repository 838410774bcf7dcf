#include "core/glob.h"

#include <cstddef>

namespace wctmon {
namespace {

/// Matches one bracket expression at pattern[p] against c; advances p past it. Returns false for
/// "no match"; sets `malformed` when the bracket never closes (then '[' is a literal).
bool matchBracket(std::string_view pattern, std::size_t& p, char c, bool& malformed) {
  std::size_t i = p + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  while (i < pattern.size() && (pattern[i] != ']' || first)) {
    first = false;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      if (pattern[i] <= c && c <= pattern[i + 2]) matched = true;
      i += 3;
    } else {
      if (pattern[i] == c) matched = true;
      ++i;
    }
  }
  if (i >= pattern.size()) {
    malformed = true;
    return false;
  }
  p = i + 1;
  return matched != negate;
}

}  // namespace

bool isGlob(std::string_view pattern) {
  return pattern.find_first_of("*?[") != std::string_view::npos;
}

bool globMatch(std::string_view pattern, std::string_view text) {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star_p = std::string_view::npos;
  std::size_t star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star_p = p++;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        bool malformed = false;
        std::size_t next = p;
        if (matchBracket(pattern, next, text[t], malformed)) {
          p = next;
          ++t;
          continue;
        }
        if (malformed && text[t] == '[') {
          ++p;
          ++t;
          continue;
        }
      } else if (pc == text[t]) {
        ++p;
        ++t;
        continue;
      }
    }
    // Mismatch: let the last star swallow one more character, or fail.
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace wctmon
