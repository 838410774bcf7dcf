#include "core/hung_window_tracker.h"

#include <algorithm>
#include <utility>

#include "model/format.h"

namespace wctmon {
namespace {

std::string summaryOf(const WindowReading& w, std::chrono::milliseconds silent) {
  std::string text = "window " + hexString(w.handle);
  if (!w.title.empty()) text += " \"" + w.title + "\"";
  text += " of thread " + std::to_string(w.tid.value) + " has not answered messages for " +
          durationText(silent);
  return text;
}

}  // namespace

std::vector<Symptom> HungWindowTracker::update(std::span<const WindowReading> readings,
                                               std::span<const WindowOwner> owners,
                                               std::chrono::milliseconds threshold,
                                               std::optional<Clock::SteadyTimePoint> probed_at) {
  const auto now = clock_.steadyNow();
  // Counted from the probe's start: a silent window's probe took the prober's whole timeout,
  // which would otherwise add to every detection.
  const auto found = std::min(now, probed_at.value_or(now));
  std::unordered_map<Pid, const std::string*> target_of;
  for (const auto& o : owners) target_of.emplace(o.pid, &o.target);

  std::unordered_map<std::uint64_t, Silence> still_silent;
  std::vector<Symptom> hung;
  for (const auto& w : readings) {
    const auto owner = target_of.find(w.pid);
    if (owner == target_of.end() || w.responding) continue;
    Silence silence{w.pid, w.tid, found};
    // A handle reused by another thread is another window: its silence starts now.
    if (const auto it = silent_.find(w.handle);
        it != silent_.end() && it->second.pid == w.pid && it->second.tid == w.tid) {
      silence.since = it->second.since;
    }
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - silence.since);
    if (silent >= threshold) {
      Symptom s;
      s.kind = IncidentKind::kWindowHung;
      s.pid = w.pid;
      s.target = *owner->second;
      s.key = "window " + hexString(w.handle);
      s.summary = summaryOf(w, silent);
      s.threads = {w.tid};
      hung.push_back(std::move(s));
    }
    still_silent.insert_or_assign(w.handle, silence);
  }
  silent_ = std::move(still_silent);
  return hung;
}

}  // namespace wctmon
