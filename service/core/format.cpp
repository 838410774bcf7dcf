#include "core/format.h"

#include <array>
#include <charconv>

namespace wctmon {

std::string hexString(std::uint64_t value) {
  std::array<char, 20> buf{'0', 'x'};
  auto [end, ec] = std::to_chars(buf.data() + 2, buf.data() + buf.size(), value, 16);
  return std::string(buf.data(), end);
}

}  // namespace wctmon
