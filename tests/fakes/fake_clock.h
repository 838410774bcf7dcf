#pragma once

#include "core/ports/clock.h"

namespace wctmon::testing {

/// A clock that moves only when told to.
class FakeClock final : public Clock {
 public:
  FakeClock() : now_(std::chrono::sys_days{std::chrono::year{2026} / 11 / 22}) {}
  [[nodiscard]] TimePoint now() const override { return now_; }
  void advance(std::chrono::milliseconds d) { now_ += d; }

 private:
  TimePoint now_;
};

}  // namespace wctmon::testing
