#include "core/format.h"

#include <array>
#include <charconv>

namespace wctmon {

std::string hexString(std::uint64_t value) {
  std::array<char, 20> buf{'0', 'x'};
  auto [end, ec] = std::to_chars(buf.data() + 2, buf.data() + buf.size(), value, 16);
  return std::string(buf.data(), end);
}

std::string threadLabel(ThreadRef thread) {
  return "[" + std::to_string(thread.pid.value) + ":" + std::to_string(thread.tid.value) + "]";
}

std::string threadList(const std::vector<ThreadRef>& threads) {
  std::string out;
  for (const auto& t : threads) {
    if (!out.empty()) out += ' ';
    out += std::to_string(t.pid.value) + ":" + std::to_string(t.tid.value);
  }
  return out;
}

}  // namespace wctmon
