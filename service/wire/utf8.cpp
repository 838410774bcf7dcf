#include "wire/utf8.h"

#include <cstddef>

namespace wctmon::wire {
namespace {

/// The bytes at the start of a sequence: all of a well-formed one, or its maximal ill-formed
/// subpart (the longest prefix of a well-formed sequence that is there, at least one byte).
struct Sequence {
  std::size_t length = 1;
  bool valid = false;
};

unsigned char byteAt(std::string_view s, std::size_t i) { return static_cast<unsigned char>(s[i]); }

/// The sequence at `i` (< size), by Unicode Table 3-7: the second byte's range depends on the
/// first (E0 A0..BF against overlongs, ED 80..9F against surrogates, F0 90..BF against
/// overlongs, F4 80..8F against code points past U+10FFFF); C0, C1 and F5..FF start nothing.
Sequence sequenceAt(std::string_view s, std::size_t i) {
  const unsigned char lead = byteAt(s, i);
  if (lead < 0x80) return {1, true};
  std::size_t need = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    need = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    need = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    need = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return {1, false};
  }
  std::size_t n = 1;
  while (n < need && i + n < s.size()) {
    const unsigned char b = byteAt(s, i + n);
    if (b < low || b > high) break;
    ++n;
    low = 0x80;
    high = 0xbf;
  }
  return {n, n == need};
}

}  // namespace

Utf8Char utf8CharAt(std::string_view text, std::size_t i) {
  const auto seq = sequenceAt(text, i);
  if (!seq.valid) return {seq.length, std::nullopt};
  // The lead byte keeps 7, 5, 4 or 3 bits by length; each continuation byte 6.
  static constexpr unsigned char kLeadMask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  char32_t code_point = byteAt(text, i) & kLeadMask[seq.length];
  for (std::size_t k = 1; k < seq.length; ++k)
    code_point = (code_point << 6) | (byteAt(text, i + k) & 0x3f);
  return {seq.length, code_point};
}

bool isValidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (byteAt(text, i) < 0x80) {  // most names are ASCII
      ++i;
      continue;
    }
    const auto seq = sequenceAt(text, i);
    if (!seq.valid) return false;
    i += seq.length;
  }
  return true;
}

std::string validUtf8(std::string_view text) {
  if (isValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  std::size_t i = 0;
  while (i < text.size()) {
    const auto seq = sequenceAt(text, i);
    if (seq.valid) {
      out.append(text.substr(i, seq.length));
    } else {
      out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
    }
    i += seq.length;
  }
  return out;
}

}  // namespace wctmon::wire
