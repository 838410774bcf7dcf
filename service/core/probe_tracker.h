#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/ports/clock.h"
#include "core/ports/prober.h"
#include "core/probe_config.h"

namespace wctmon {

/// The verdict of a target's probes, from their outcomes in order: unresponsive after
/// `failures` failures in a row, answering again after `successes` successes in a row. Pure:
/// time from the injected clock.
class ProbeTracker {
 public:
  /// What an outcome changed.
  enum class Change {
    kNone,
    /// Failed `failures` times in a row: the target is unresponsive from now on.
    kUnresponsive,
    /// Still unresponsive: failed again.
    kStillUnresponsive,
    /// Passed `successes` times in a row after being unresponsive (or, the first time, at all:
    /// an incident left open by an earlier run of the service can end).
    kAnswers,
  };

  /// What people and metrics read of a target's probe.
  struct Status {
    /// "passing", "failing" (not yet unresponsive), "unresponsive", "unknown" (no outcome yet).
    std::string state = "unknown";
    std::uint32_t failures_in_a_row = 0;
    std::uint64_t passed = 0;
    std::uint64_t failed = 0;
    std::optional<ProbeOutcome> last;
    /// When the failures in a row began (steady clock); none while passing.
    std::optional<Clock::SteadyTimePoint> failing_since;
  };

  ProbeTracker(const Clock& clock, ProbeConfig probe) : clock_(clock), probe_(std::move(probe)) {}

  /// Takes the next outcome.
  [[nodiscard]] Change record(const ProbeOutcome& outcome);

  /// The line an unresponsive incident opens with: "http://127.0.0.1:8080/ failed 3 times in a
  /// row over 2 s: timed out after 2000 ms".
  [[nodiscard]] std::string unresponsiveSummary() const;
  /// How it resolves: "http://127.0.0.1:8080/ passed again (200 OK in 3 ms)".
  [[nodiscard]] std::string answersSummary() const;

  [[nodiscard]] const Status& status() const { return status_; }
  [[nodiscard]] const ProbeConfig& probe() const { return probe_; }

 private:
  const Clock& clock_;
  ProbeConfig probe_;
  Status status_;
  bool unresponsive_ = false;
  bool answered_once_ = false;
  std::uint32_t successes_in_a_row_ = 0;
};

/// A target's probe as people and metrics read it.
struct TargetProbeStatus {
  std::string target;
  /// What it asks: ProbeConfig::describe().
  std::string probe;
  ProbeTracker::Status status;
};

}  // namespace wctmon
