#pragma once

#include <chrono>
#include <map>
#include <string>

#include "core/ports/alert_sink.h"
#include "core/ports/clock.h"

namespace wctmon {

/// Lets through at most `max_per_window` alerts per target in each window; alerts without a
/// target (the service's own) always pass. Pure: windows are measured on the injected clock's
/// steady reading, so a step of the wall clock neither ends a window early nor stretches it.
class AlertRateLimiter {
 public:
  AlertRateLimiter(const Clock& clock, std::chrono::milliseconds window, unsigned max_per_window)
      : clock_(clock), window_(window), max_(max_per_window) {}

  /// True when `alert` may be sent now; counts it.
  [[nodiscard]] bool admit(const Alert& alert);

  /// Changes the limits; the current windows carry on.
  void setLimits(std::chrono::milliseconds window, unsigned max_per_window) {
    window_ = window;
    max_ = max_per_window;
  }

  /// Alerts held back so far.
  [[nodiscard]] std::size_t suppressed() const { return suppressed_; }

 private:
  struct Window {
    Clock::SteadyTimePoint start;
    unsigned count = 0;
  };
  const Clock& clock_;
  std::chrono::milliseconds window_;
  unsigned max_;
  std::map<std::string, Window> windows_;
  std::size_t suppressed_ = 0;
};

}  // namespace wctmon
