#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ports/clock.h"
#include "core/ports/window_prober.h"
#include "core/symptom.h"
#include "model/ids.h"

namespace wctmon {

/// A watched process whose windows are probed, and the target that watches it.
struct WindowOwner {
  Pid pid;
  /// The target's name, which the symptom carries.
  std::string target;
};

/// Finds windows that stopped answering messages: a top-level window of a watched process whose
/// thread has not answered in every reading for the threshold (ProcDump -h waits 5 s, which is
/// also when Windows itself judges a window hung). An answer restarts the wait; a window that is
/// gone, changed owner, or belongs to a process not watched (any more) is forgotten. The wait is
/// counted from the first reading that found the window silent. Pure: time from the injected
/// clock's steady reading.
class HungWindowTracker {
 public:
  /// How long a window must stay silent, unless told otherwise: ProcDump -h's 5 s.
  static constexpr std::chrono::milliseconds kDefaultThreshold{5000};

  /// `clock` must outlive the tracker.
  explicit HungWindowTracker(const Clock& clock) : clock_(clock) {}

  /// Takes one reading of the windows of `owners` and returns a kWindowHung symptom (key
  /// "window 0x…", threads = the window's thread, target = its owner's) for each window silent
  /// for `threshold` now, in the order of `readings`. Readings of other processes are ignored.
  /// Level-triggered: the whole set that holds now, every call. `probed_at`: when the probe that
  /// gave the readings began (a steady reading of the clock); a window first found silent has
  /// been since then, since its probe waited the prober's timeout for it. Default: now.
  [[nodiscard]] std::vector<Symptom> update(
      std::span<const WindowReading> readings, std::span<const WindowOwner> owners,
      std::chrono::milliseconds threshold = kDefaultThreshold,
      std::optional<Clock::SteadyTimePoint> probed_at = std::nullopt);

 private:
  /// A window found silent, and since when.
  struct Silence {
    Pid pid;
    Tid tid;
    Clock::SteadyTimePoint since;
  };

  const Clock& clock_;
  /// By window handle: the windows silent at the last reading.
  std::unordered_map<std::uint64_t, Silence> silent_;
};

}  // namespace wctmon
