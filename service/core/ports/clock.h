#pragma once

#include <chrono>

namespace wctmon {

/// The time source of everything that decides by time, injected so that tests need no sleeps.
/// Two readings: the wall clock for timestamps people read (when an incident opened), and a
/// steady clock for durations (a hang threshold, an alert window, a capture interval), which an
/// NTP step or a changed date must not stretch or shrink.
class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  using SteadyTimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  /// Wall-clock time: for timestamps only, never to measure how long something took.
  [[nodiscard]] virtual TimePoint now() const = 0;
  /// Monotonic time: for durations, compared only with other readings of this clock.
  [[nodiscard]] virtual SteadyTimePoint steadyNow() const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  [[nodiscard]] TimePoint now() const override { return std::chrono::system_clock::now(); }
  [[nodiscard]] SteadyTimePoint steadyNow() const override {
    return std::chrono::steady_clock::now();
  }
};

}  // namespace wctmon
