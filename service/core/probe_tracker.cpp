#include "core/probe_tracker.h"

#include "model/format.h"

namespace wctmon {
namespace {

std::string latencyText(std::chrono::microseconds latency) {
  return latency < std::chrono::milliseconds(1)
             ? std::to_string(latency.count()) + " us"
             : std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(latency).count()) +
                   " ms";
}

}  // namespace

ProbeTracker::Change ProbeTracker::record(const ProbeOutcome& outcome) {
  status_.last = outcome;
  if (!outcome.passed) {
    ++status_.failed;
    successes_in_a_row_ = 0;
    if (status_.failures_in_a_row++ == 0) status_.failing_since = clock_.steadyNow();
    if (unresponsive_) {
      status_.state = "unresponsive";
      return Change::kStillUnresponsive;
    }
    if (status_.failures_in_a_row >= probe_.failures) {
      unresponsive_ = true;
      status_.state = "unresponsive";
      return Change::kUnresponsive;
    }
    status_.state = "failing";
    return Change::kNone;
  }
  ++status_.passed;
  ++successes_in_a_row_;
  if (unresponsive_ && successes_in_a_row_ < probe_.successes) return Change::kNone;
  status_.failures_in_a_row = 0;
  status_.failing_since.reset();
  status_.state = "passing";
  const bool first = !answered_once_;
  answered_once_ = true;
  if (unresponsive_ || first) {
    unresponsive_ = false;
    return Change::kAnswers;
  }
  return Change::kNone;
}

std::string ProbeTracker::unresponsiveSummary() const {
  std::string out = probe_.describe() + " failed " + std::to_string(status_.failures_in_a_row) +
                    (status_.failures_in_a_row == 1 ? " time" : " times in a row");
  if (status_.failing_since) {
    out += " over " + durationText(std::chrono::duration_cast<std::chrono::milliseconds>(
                          clock_.steadyNow() - *status_.failing_since));
  }
  if (status_.last) out += ": " + status_.last->detail;
  return out;
}

std::string ProbeTracker::answersSummary() const {
  std::string out = probe_.describe() + " passed again";
  if (status_.last) {
    out += " (" + status_.last->detail + " in " + latencyText(status_.last->latency) + ")";
  }
  return out;
}

}  // namespace wctmon
