#include "core/pending_service_tracker.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "model/format.h"

namespace wctmon {
namespace {

std::string summaryOf(const ServiceReading& r, std::chrono::milliseconds waited,
                      std::chrono::milliseconds allowed) {
  std::string text = "service " + r.name;
  if (!r.display_name.empty() && r.display_name != r.name) text += " (" + r.display_name + ")";
  text += " has been " + std::string(toString(r.state)) + " at checkpoint " +
          std::to_string(r.checkpoint) + " for " + durationText(waited);
  if (r.wait_hint.count() > 0) {
    text += ", past its wait hint of " + durationText(r.wait_hint);
  } else {
    text += " with no wait hint (allowed " + durationText(allowed) + ")";
  }
  return text;
}

}  // namespace

std::string foldServiceName(std::string_view name) {
  std::string folded(name);
  std::transform(folded.begin(), folded.end(), folded.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return folded;
}

std::vector<Symptom> PendingServiceTracker::update(std::span<const ServiceReading> readings,
                                                   const PendingServiceRules& rules) {
  const auto now = clock_.steadyNow();
  std::unordered_set<std::string> selected;
  for (const auto& name : rules.names) selected.insert(foldServiceName(name));

  std::unordered_map<std::string, Progress> still_pending;
  std::vector<Symptom> stuck;
  for (const auto& r : readings) {
    std::string key = foldServiceName(r.name);
    if (!isPending(r.state) || (!rules.all && !selected.contains(key))) continue;
    Progress progress{r.state, r.checkpoint, r.pid, now};
    // The same step as the last reading's keeps its start; anything else is progress.
    if (const auto it = pending_.find(key); it != pending_.end() && it->second.state == r.state &&
                                            it->second.checkpoint == r.checkpoint &&
                                            it->second.pid == r.pid) {
      progress.since = it->second.since;
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - progress.since);
    const auto allowed = r.wait_hint.count() > 0 ? r.wait_hint : rules.no_hint_wait;
    if (waited > allowed) {
      Symptom s;
      s.kind = IncidentKind::kServiceHung;
      s.pid = r.pid;
      s.target = "services";
      s.key = "service " + r.name;
      s.summary = summaryOf(r, waited, allowed);
      stuck.push_back(std::move(s));
    }
    still_pending.insert_or_assign(std::move(key), progress);
  }
  // What is no longer pending (or selected, or listed) starts afresh if it comes back.
  pending_ = std::move(still_pending);
  return stuck;
}

}  // namespace wctmon
