#include "model/format.h"

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

std::string countOf(std::size_t n, std::string_view noun) {
  std::string out = std::to_string(n) + " ";
  out += noun;
  if (n != 1) out += noun.ends_with('s') ? "es" : "s";
  return out;
}

std::string durationText(std::chrono::milliseconds d) {
  const auto ms = d.count() < 0 ? 0 : d.count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  const auto s = ms / 1000;
  const auto two = [](long long v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + two(s % 60) + "s";
  if (s < 86400) return std::to_string(s / 3600) + "h" + two(s / 60 % 60) + "m";
  return std::to_string(s / 86400) + "d" + two(s / 3600 % 24) + "h";
}

std::string asciiLower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace wctmon
