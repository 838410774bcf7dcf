#include "os/proc_stat.h"

#include <charconv>

namespace wctmon {

std::optional<std::int64_t> parseBootTime(std::string_view proc_stat) {
  constexpr std::string_view kKey = "btime ";
  std::size_t at = 0;
  while (at < proc_stat.size()) {
    auto line = proc_stat.substr(at, proc_stat.find('\n', at) - at);
    at += line.size() + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    std::int64_t seconds = 0;
    const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), seconds);
    if (error != std::errc{} || end != line.data() + line.size()) return std::nullopt;
    return seconds;
  }
  return std::nullopt;
}

}  // namespace wctmon
