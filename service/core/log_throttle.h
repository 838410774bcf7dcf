#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wctmon {

/// At most one log line per interval for a kind of event that can repeat at will (a refused
/// token, a connection closed for abuse, a target's overdue samples), so that nothing can fill
/// the log. Thread-safe.
class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::steady_clock::duration interval) : interval_(interval) {}

  /// Whether this event gets its line, with how many were held back since the last line; nullopt
  /// when it is held back.
  [[nodiscard]] std::optional<std::uint64_t> admit() {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    auto last = last_.load();
    if ((last == 0 || now - last >= interval_.count()) &&
        last_.compare_exchange_strong(last, now)) {
      return held_back_.exchange(0);
    }
    ++held_back_;
    return std::nullopt;
  }

  /// What a line admitted with `others` held back says of them: " (N WHAT)", or nothing.
  [[nodiscard]] static std::string heldBack(std::uint64_t others, std::string_view what) {
    return others > 0 ? " (" + std::to_string(others) + " " + std::string(what) + ")" : "";
  }

 private:
  std::chrono::steady_clock::duration interval_;
  std::atomic<std::int64_t> last_{0};  // steady clock ticks of the last line; 0: none yet
  std::atomic<std::uint64_t> held_back_{0};
};

}  // namespace wctmon
