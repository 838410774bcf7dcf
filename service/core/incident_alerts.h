#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "core/alert_rate_limiter.h"
#include "core/config.h"
#include "core/incident_tracker.h"
#include "core/ports/alert_sink.h"
#include "core/ports/clock.h"
#include "model/mutex.h"

namespace wctmon {

/// The alerts incidents raise: what each says (its kind, severity, message and fields) and how
/// many a target may raise per window. Thread-safe.
class IncidentAlerts {
 public:
  IncidentAlerts(const Clock& clock, const Config::Alerts& limits)
      : limiter_(clock, limits.window, limits.max_per_window) {}

  void setLimits(const Config::Alerts& limits);

  /// The alert of an incident's opening, when its target's rate allows; of its resolution
  /// exactly when its opening was alerted (whatever the rate: a receiver that was told of the
  /// opening must hear of the end, and one that was not has nothing to end); none for an update.
  [[nodiscard]] std::optional<Alert> forEvent(IncidentEvent::Type type,
                                              std::shared_ptr<const Incident> incident);
  /// The alert saying that no evidence of `incident` could be taken, when none could and its
  /// target's rate allows.
  [[nodiscard]] std::optional<Alert> forFailedCapture(std::shared_ptr<const Incident> incident);

  /// Takes `open` (incidents open when the service last stopped) as alerted: their opening was,
  /// by the run before, and their resolution will be. Their opening alerts, for the sinks'
  /// resume() (not rate-limited: each was admitted once).
  [[nodiscard]] std::vector<Alert> adopt(const std::vector<Incident>& open);

  /// Alerts held back by the rate limit so far.
  [[nodiscard]] std::uint64_t suppressed() const;

 private:
  [[nodiscard]] std::optional<Alert> admitted(Alert alert) WCTMON_EXCLUDES(mutex_);

  mutable Mutex mutex_;
  AlertRateLimiter limiter_ WCTMON_GUARDED_BY(mutex_);
  /// The open incidents whose opening was alerted.
  std::unordered_set<std::int64_t> announced_ WCTMON_GUARDED_BY(mutex_);
};

}  // namespace wctmon
