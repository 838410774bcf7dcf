#include "api/proc_stat_text.h"

#include <array>
#include <charconv>
#include <cstddef>

namespace wctmon::api {

namespace {

template <typename T>
std::optional<T> number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<SelfStat> parseSelfStat(std::string_view text) {
  // The name is the one field that may hold spaces and parentheses: the fields that follow
  // start after its last ')'.
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  text.remove_prefix(close + 1);
  // Fields 3 (state) to 24 (rss) of proc(5), from index 0.
  constexpr std::size_t kFields = 22;
  std::array<std::string_view, kFields> fields;
  std::size_t n = 0;
  while (n < kFields) {
    const auto start = text.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    text.remove_prefix(start);
    const auto end = text.find_first_of(" \n");
    fields[n++] = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end);
  }
  if (n < kFields) return std::nullopt;
  const auto field = [&](std::size_t proc5_number) {
    return number<std::uint64_t>(fields[proc5_number - 3]);
  };
  const auto utime = field(14);
  const auto stime = field(15);
  const auto threads = field(20);
  const auto start = field(22);
  const auto vsize = field(23);
  // rss is signed in the kernel's format (%ld), never negative in practice.
  const auto rss = number<std::int64_t>(fields[24 - 3]);
  if (!utime || !stime || !threads || !start || !vsize || !rss || *rss < 0) return std::nullopt;
  return SelfStat{*utime, *stime, *threads, *start, *vsize, static_cast<std::uint64_t>(*rss)};
}

}  // namespace wctmon::api
