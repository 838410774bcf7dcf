#include "core/bounded_capture.h"

#include <algorithm>
#include <string>

namespace wctmon {
namespace {

/// Threads captured per call: the inspector gives its memory back after each call (a few
/// milliseconds), and the budget is checked between calls.
constexpr std::size_t kCapturesPerCall = 4;

}  // namespace

std::vector<ThreadCapture> captureBounded(ThreadInspector& inspector,
                                          std::span<const ThreadRef> threads, const Clock& clock,
                                          CaptureLimits limits) {
  std::vector<ThreadCapture> out;
  out.reserve(threads.size());
  const auto deadline = clock.steadyNow() + limits.budget;
  const auto wanted = std::min(threads.size(), limits.max_threads);
  while (out.size() < wanted && clock.steadyNow() < deadline) {
    const auto n = std::min(kCapturesPerCall, wanted - out.size());
    auto taken = inspector.capture(threads.subspan(out.size(), n));
    taken.resize(n);  // one per thread, as the port promises
    for (std::size_t i = 0; i < n; ++i) taken[i].thread = threads[out.size() + i];
    out.insert(out.end(), std::make_move_iterator(taken.begin()),
               std::make_move_iterator(taken.end()));
  }
  const auto budget_s = std::chrono::duration_cast<std::chrono::seconds>(limits.budget).count();
  for (std::size_t i = out.size(); i < threads.size(); ++i) {
    ThreadCapture named;
    named.thread = threads[i];
    named.error = i < wanted
                      ? "not captured: the capture's time budget (" + std::to_string(budget_s) +
                            " s) was spent on the threads before it"
                      : "not captured: the evidence is taken from the first " +
                            std::to_string(limits.max_threads) + " threads";
    out.push_back(std::move(named));
  }
  return out;
}

}  // namespace wctmon
