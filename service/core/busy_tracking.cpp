// Busy threads: how much of a core each thread used between samples, and the busy incidents
// that end when their thread stops spinning. Whether a busy thread spins in place or makes
// progress is for its frames to tell (core/busy_verdict.h); this file only finds the candidates.
#include "core/incident_tracker.h"

namespace wctmon {
void IncidentTracker::updateCpu(const ProcessObservation& o, ProcessState& state,
                                Clock::SteadyTimePoint now) {
  const auto sample = state.samples;
  const double share = o.target->busy.cpu_percent / 100.0;
  for (const auto& t : o.threads) {
    if (t.id.pid != o.process.pid || !t.cpu_time) continue;
    auto [it, inserted] = state.cpu.try_emplace(t.id.tid.value);
    auto& h = it->second;
    // A thread that never sleeps but shares its core with others on a loaded machine is as busy
    // as one that has a core to itself: its time in a run queue counts too.
    const auto wanted = *t.cpu_time + t.queued_time.value_or(std::chrono::nanoseconds(0));
    if (!inserted && now > h.at && *t.cpu_time >= h.cpu && wanted >= h.wanted) {
      const auto used = std::chrono::duration<double>(wanted - h.wanted).count();
      const auto elapsed = std::chrono::duration<double>(now - h.at).count();
      if (used >= share * elapsed && o.target->busy.enabled) {
        if (!h.busy_since) h.busy_since = h.at;
        h.quiet = 0;
      } else {
        h.busy_since.reset();
        ++h.quiet;
      }
    }
    h.cpu = *t.cpu_time;
    h.wanted = wanted;
    h.at = now;
    h.seen = sample;
  }
  std::erase_if(state.cpu, [sample](const auto& entry) { return entry.second.seen != sample; });
}

std::optional<std::chrono::milliseconds> IncidentTracker::busyFor(const ProcessIdentity& process,
                                                                  Tid t) const {
  const auto p = processes_.find(process);
  if (p == processes_.end()) return std::nullopt;
  const auto h = p->second.cpu.find(t.value);
  if (h == p->second.cpu.end() || !h->second.busy_since) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steadyNow() -
                                                               *h->second.busy_since);
}

std::vector<ThreadRef> IncidentTracker::busyThreads(const ProcessObservation& o) const {
  std::vector<ThreadRef> out;
  if (!o.target->busy.enabled) return out;
  const auto p = processes_.find(o.process);
  if (p == processes_.end()) return out;
  for (const auto& [tid, h] : p->second.cpu) {
    if (!h.busy_since || clock_.steadyNow() - *h.busy_since < o.target->busy.threshold) continue;
    if (p->second.open.contains(symptomSignature(IncidentKind::kBusy, busyKey(Tid{tid})))) {
      continue;
    }
    out.push_back(ThreadRef{o.process.pid, Tid{tid}});
  }
  return out;
}

std::vector<IncidentEvent> IncidentTracker::settleBusy(const ProcessObservation& o) {
  std::vector<IncidentEvent> events;
  const auto p = processes_.find(o.process);
  if (p == processes_.end()) return events;
  auto& state = p->second;
  for (auto it = state.open.begin(); it != state.open.end();) {
    const auto& incident = it->second;
    if (incident.kind != IncidentKind::kBusy || incident.threads.empty()) {
      ++it;
      continue;
    }
    const auto h = state.cpu.find(incident.threads.front().tid.value);
    if (h != state.cpu.end() && h->second.quiet < kQuietSamplesToResolve) {
      ++it;
      continue;
    }
    events.push_back(
        {IncidentEvent::Type::kResolved,
         resolved(incident, h == state.cpu.end() ? "the thread is gone"
                                                 : "the thread no longer uses a whole core")});
    it = state.open.erase(it);
  }
  return events;
}

}  // namespace wctmon
