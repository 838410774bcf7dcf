// Ill-formed UTF-8 becomes U+FFFD, one per maximal subpart, as WHATWG and Unicode say.
#include "wire/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace wctmon::wire {
namespace {

/// `pattern` with each '?' standing for U+FFFD (none of the cases below has a real '?').
std::string replaced(std::string_view pattern) {
  std::string out;
  for (const char c : pattern) {
    if (c == '?') {
      out += "\xef\xbf\xbd";
    } else {
      out += c;
    }
  }
  return out;
}

struct Case {
  std::string input;
  std::string expected;  // with '?' for U+FFFD
  const char* what;
};

// Expected outputs are what Python's bytes.decode("utf-8", "replace") gives, which follows the
// same practice.
const std::vector<Case>& invalidCases() {
  static const std::vector<Case> cases{
      {"\x80", "?", "a lone continuation byte"},
      {"\xbf", "?", "a lone continuation byte"},
      {"\xff", "?", "FF starts nothing"},
      {"\xc0\xaf", "??", "C0 starts nothing (overlong '/')"},
      {"\xc1\xbf", "??", "C1 starts nothing (overlong)"},
      {"\xe0\x80\xaf", "???", "3-byte overlong"},
      {"\xe0\x9f\xbf", "???", "3-byte overlong, highest"},
      {"\xf0\x80\x80\xaf", "????", "4-byte overlong"},
      {"\xf0\x8f\xbf\xbf", "????", "4-byte overlong, highest"},
      {"\xed\xa0\x80", "???", "surrogate U+D800"},
      {"\xed\xbf\xbf", "???", "surrogate U+DFFF"},
      {"\xed\xa0\x80\xed\xb0\x80", "??????", "a surrogate pair, CESU-8 style"},
      {"\xf4\x90\x80\x80", "????", "U+110000, past the last code point"},
      {"\xf5\x80\x80\x80", "????", "F5 starts nothing"},
      {"\xf8\x88\x80\x80\x80", "?????", "an old 5-byte form"},
      {"\xc3", "?", "truncated 2-byte sequence"},
      {"\xe2\x82", "?", "truncated 3-byte sequence: one maximal subpart"},
      {"\xf0\x9f\x98", "?", "truncated 4-byte sequence: one maximal subpart"},
      {"\xe2\x82"
       "A",
       "?A", "a truncated sequence keeps the next character"},
      {"\xf0\x9f\x98\xf0\x9f\x98\x80", "?\xf0\x9f\x98\x80",
       "a truncated sequence keeps the next sequence"},
      {"a\xff"
       "b",
       "a?b", "one bad byte among ASCII"},
      {"\xe2(\xa1", "?(?", "a non-continuation byte ends the subpart"},
      // Unicode 15, section 3.9, table 3-8.
      {"\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64", "a???b?c??d",
       "the Unicode standard's example"},
  };
  return cases;
}

TEST(Utf8, EachMaximalIllFormedSubpartBecomesOneReplacementCharacter) {
  for (const auto& c : invalidCases()) {
    EXPECT_FALSE(isValidUtf8(c.input)) << c.what;
    EXPECT_EQ(validUtf8(c.input), replaced(c.expected)) << c.what;
    EXPECT_TRUE(isValidUtf8(validUtf8(c.input))) << c.what;
  }
}

TEST(Utf8, WellFormedTextComesBackUnchanged) {
  for (const std::string text : {"", "plain ascii \t\n", "\xc3\xa9t\xc3\xa9",
                                 "\xe2\x82\xac 10",      // U+20AC
                                 "\xf0\x9f\x98\x80",     // U+1F600
                                 "\xed\x9f\xbf",         // U+D7FF, below the surrogates
                                 "\xee\x80\x80",         // U+E000, above them
                                 "\xef\xbf\xbd",         // U+FFFD itself
                                 "\xf4\x8f\xbf\xbf"}) {  // U+10FFFF, the last
    EXPECT_TRUE(isValidUtf8(text)) << text;
    EXPECT_EQ(validUtf8(text), text);
  }
  EXPECT_EQ(validUtf8(std::string("nul\0inside", 10)), std::string("nul\0inside", 10));
}

/// The shortest UTF-8 form of `cp`, or an overlong one of `length` bytes.
std::string encode(std::uint32_t cp, int length) {
  std::string out;
  if (length == 1) return std::string(1, static_cast<char>(cp));
  static constexpr unsigned char kLead[] = {0, 0, 0xc0, 0xe0, 0xf0};
  out += static_cast<char>(kLead[length] | (cp >> (6 * (length - 1))));
  for (int i = length - 2; i >= 0; --i) {
    out += static_cast<char>(0x80 | ((cp >> (6 * i)) & 0x3f));
  }
  return out;
}

int shortestLength(std::uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

TEST(Utf8, EveryScalarValueIsValidAndNothingElseIs) {
  for (std::uint32_t cp = 0; cp <= 0x10ffff; ++cp) {
    const bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
    const auto text = encode(cp, shortestLength(cp));
    ASSERT_EQ(isValidUtf8(text), !surrogate) << std::hex << cp;
    // Every longer form of the same code point is overlong.
    for (int length = shortestLength(cp) + 1; length <= 4; ++length) {
      ASSERT_FALSE(isValidUtf8(encode(cp, length))) << std::hex << cp << " in " << length;
    }
  }
  for (std::uint32_t cp = 0x110000; cp < 0x200000; cp += 0x1111) {
    EXPECT_FALSE(isValidUtf8(encode(cp, 4))) << std::hex << cp;
    EXPECT_EQ(validUtf8(encode(cp, 4)), replaced("????")) << std::hex << cp;
  }
}

TEST(Utf8, EachScalarValueDecodesToItselfAndIllFormedBytesToTheirSubpart) {
  for (std::uint32_t cp = 0; cp <= 0x10ffff; cp += (cp < 0x3000 ? 1 : 0x101)) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const auto text = "a" + encode(cp, shortestLength(cp));
    const auto c = utf8CharAt(text, 1);
    ASSERT_EQ(c.code_point, char32_t{cp}) << std::hex << cp;
    ASSERT_EQ(c.length, static_cast<std::size_t>(shortestLength(cp))) << std::hex << cp;
  }
  // A surrogate is three subparts of one byte; a truncated sequence one of its bytes so far.
  EXPECT_EQ(utf8CharAt("\xed\xa0\x80", 0).length, 1U);
  EXPECT_FALSE(utf8CharAt("\xed\xa0\x80", 0).code_point.has_value());
  EXPECT_EQ(utf8CharAt("\xe2\x80", 0).length, 2U);
  EXPECT_FALSE(utf8CharAt("\xe2\x80", 0).code_point.has_value());
}

}  // namespace
}  // namespace wctmon::wire
