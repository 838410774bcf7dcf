#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/ports/hot_spot_sampler.h"

namespace wctmon {

/// Whether a busy thread spins in place, from its profile.
struct BusyVerdict {
  /// The same few functions hold nearly all of both windows' samples.
  bool spinning = false;
  /// Both windows' samples by function, most first.
  std::vector<HotFunction> hot;
  std::uint32_t samples = 0;
  /// Why it is not spinning (its frames move, too few samples); empty when it is.
  std::string why_not;
};

/// Judges a profile: spinning when, in each window, at most `max_functions` functions hold
/// `coverage` of the samples, and they are the same functions in both. A thread whose work moves
/// through more functions, or other ones from one window to the next, is making progress.
[[nodiscard]] BusyVerdict judgeBusy(const ThreadProfile& profile, std::size_t max_functions = 3,
                                    double coverage = 0.9);

/// "spin_wait (libspin.so) 412, sched_yield (libc.so.6) 6": the first `limit` functions of a
/// verdict with their samples.
[[nodiscard]] std::string hotFunctionsText(const std::vector<HotFunction>& hot,
                                           std::size_t limit = 5);

}  // namespace wctmon
