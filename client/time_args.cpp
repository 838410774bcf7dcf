#include "client/time_args.h"

#include <google/protobuf/util/time_util.h>

#include <charconv>
#include <cstdint>
#include <utility>

#include "wire/proto_convert.h"

namespace wctmon::client {

std::optional<std::chrono::milliseconds> parseDuration(std::string_view text) {
  using std::chrono::milliseconds;
  static const std::pair<std::string_view, milliseconds> kUnits[] = {{"ms", milliseconds(1)},
                                                                     {"s", std::chrono::seconds(1)},
                                                                     {"m", std::chrono::minutes(1)},
                                                                     {"h", std::chrono::hours(1)},
                                                                     {"d", std::chrono::hours(24)}};
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || value < 0) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  for (const auto& [name, size] : kUnits) {
    // Bounded so that a deadline computed from it cannot overflow: ten years at most.
    if (unit == name && value <= std::chrono::hours(24 * 3660) / size) return value * size;
  }
  return std::nullopt;
}

std::optional<std::chrono::system_clock::time_point> parseSince(
    const std::string& text, std::chrono::system_clock::time_point now) {
  if (const auto ago = parseDuration(text)) return now - *ago;
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(text, &t)) return std::nullopt;
  return wire::fromTimestamp(t);
}

}  // namespace wctmon::client
