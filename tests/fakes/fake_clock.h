#pragma once

#include "core/ports/clock.h"

namespace wctmon::testing {

/// A clock that moves only when told to. Time passing moves both readings; a step of the wall
/// clock alone (NTP, a changed date) moves only now().
class FakeClock final : public Clock {
 public:
  FakeClock()
      : now_(std::chrono::sys_days{std::chrono::year{2026} / 11 / 22}),
        steady_(std::chrono::hours(1000)) {}
  [[nodiscard]] TimePoint now() const override { return now_; }
  [[nodiscard]] SteadyTimePoint steadyNow() const override { return steady_; }
  /// Time passes: both readings move by `d`.
  void advance(std::chrono::milliseconds d) {
    now_ += d;
    steady_ += d;
  }
  /// The wall clock is set forward (or back, with a negative `d`); no time passes.
  void stepWallClock(std::chrono::milliseconds d) { now_ += d; }

 private:
  TimePoint now_;
  SteadyTimePoint steady_;
};

}  // namespace wctmon::testing
