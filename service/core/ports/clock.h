#pragma once

#include <chrono>

namespace wctmon {

/// The time source of everything that decides by time, injected so that tests need no sleeps.
class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  [[nodiscard]] virtual TimePoint now() const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  [[nodiscard]] TimePoint now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace wctmon
