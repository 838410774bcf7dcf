#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

#include "core/ports/clock.h"
#include "core/ports/thread_inspector.h"

namespace wctmon {

/// The most threads of one incident (or one analysis) whose evidence is captured: each is
/// stopped and unwound in turn (up to about 0.1 s each), so that a deadlock of thousands of
/// threads would hold the threads and the service's memory for minutes.
inline constexpr std::size_t kMaxCapturedThreads = 32;

/// How long the captures of one incident may go on before the threads left are named, not
/// taken: a thread whose unwinding crawls (a huge stack, slow debug information) does not hold
/// up the rest of the service's evidence for long.
inline constexpr std::chrono::seconds kCaptureTimeBudget{10};

/// What a capture of many threads may cost.
struct CaptureLimits {
  std::size_t max_threads = kMaxCapturedThreads;
  std::chrono::milliseconds budget = kCaptureTimeBudget;
};

/// Captures `threads` in order, a few at a time, until `limits.max_threads` are taken or the
/// time budget is spent; every thread left gets a capture that says why it was not taken. One
/// capture per thread, in order, as ThreadInspector::capture.
[[nodiscard]] std::vector<ThreadCapture> captureBounded(ThreadInspector& inspector,
                                                        std::span<const ThreadRef> threads,
                                                        const Clock& clock,
                                                        CaptureLimits limits = {});

}  // namespace wctmon
