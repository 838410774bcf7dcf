#include "wire/terminal_text.h"

#include "wire/utf8.h"

namespace wctmon::wire {
namespace {

/// Characters that steer a terminal or reorder what it shows, rather than being shown.
bool steersTheTerminal(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) ||                        // C0, DEL, C1 (0x9b is CSI)
         c == 0x061c || c == 0x200e || c == 0x200f ||                   // bidi marks
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);  // bidi embeddings
}

/// "\\x1b" for a byte, "\\u009b" for a code point.
std::string escaped(char kind, unsigned value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = {'\\', kind};
  for (int digit = kind == 'x' ? 1 : 3; digit >= 0; --digit)
    out += kHex[(value >> (4 * digit)) & 0xf];
  return out;
}

}  // namespace

std::string terminalSafe(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = utf8CharAt(text, i);
    if (!c.code_point) {
      for (std::size_t k = 0; k < c.length; ++k) {
        out += escaped('x', static_cast<unsigned char>(text[i + k]));
      }
    } else if (*c.code_point == '\n' && keep_newlines) {
      out += '\n';
    } else if (steersTheTerminal(*c.code_point)) {
      out += *c.code_point < 0x80 ? escaped('x', static_cast<unsigned>(*c.code_point))
                                  : escaped('u', static_cast<unsigned>(*c.code_point));
    } else {
      out.append(text.substr(i, c.length));
    }
    i += c.length;
  }
  return out;
}

std::size_t displayWidth(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); i += utf8CharAt(text, i).length) ++width;
  return width;
}

std::string fitWidth(std::string_view text, std::size_t width) {
  if (displayWidth(text) <= width) return std::string(text);
  if (width == 0) return {};
  std::string out;
  std::size_t i = 0;
  for (std::size_t columns = 0; columns + 1 < width; ++columns) {
    const auto length = utf8CharAt(text, i).length;
    out.append(text.substr(i, length));
    i += length;
  }
  return out + "\xe2\x80\xa6";  // U+2026 HORIZONTAL ELLIPSIS
}

}  // namespace wctmon::wire
