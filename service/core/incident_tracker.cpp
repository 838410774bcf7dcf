#include "core/incident_tracker.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/incident_building.h"
#include "model/format.h"

namespace wctmon {
namespace {

using incident_building::chainsOf;
using incident_building::findProcess;
using incident_building::hangSignature;
using incident_building::isIgnored;
using incident_building::laterOf;
using incident_building::nameOf;
using incident_building::newIncident;
using incident_building::setProcesses;
using incident_building::spursOf;
using incident_building::unionOf;
using incident_building::valuesOf;

}  // namespace

std::string waitKeyText(const WaitObject& wait) {
  return std::string(toString(wait.type)) + " " + wait.name;
}

std::vector<IncidentEvent> IncidentTracker::observe(const ProcessObservation& o) {
  std::vector<IncidentEvent> events;
  auto& state = processes_[o.process];
  state.sees_other_processes = o.target->out_of_proc;
  updateHistory(o, state, clock_.steadyNow());
  updateCpu(o, state, clock_.steadyNow());
  trackDeadlocks(o, events);
  trackHangs(o, state, events);
  return events;
}

void IncidentTracker::updateHistory(const ProcessObservation& o, ProcessState& state,
                                    Clock::SteadyTimePoint now) {
  // Updated in place: a process is sampled every interval and most of its threads sit in the
  // same wait as last time.
  const auto sample = ++state.samples;
  for (const auto& t : o.threads) {
    if (t.status != ObjectStatus::kBlocked || !t.wait) continue;
    auto [it, inserted] = state.history.try_emplace(t.id.tid.value);
    auto& h = it->second;
    const bool same_wait =
        !inserted && h.type == t.wait->type && h.key == t.wait->key && h.name == t.wait->name;
    // Same wait, and (when known) not scheduled since: the wait goes on.
    const bool no_progress =
        !h.switches || !t.context_switches || *h.switches == *t.context_switches;
    h.first = inserted;
    h.continued = same_wait && no_progress;
    if (!h.continued) {
      h.type = t.wait->type;
      h.key = t.wait->key;
      h.name = t.wait->name;
      h.since = now;
    }
    h.switches = t.context_switches;
    h.seen = sample;
  }
  std::erase_if(state.history, [sample](const auto& entry) { return entry.second.seen != sample; });
}
void IncidentTracker::trackHangs(const ProcessObservation& o, ProcessState& state,
                                 std::vector<IncidentEvent>& events) {
  const auto now = clock_.now();
  // How long a thread waits is measured on the steady clock: a step of the wall clock (NTP, a
  // changed date) must neither open a hang early nor hold one back.
  const auto steady_now = clock_.steadyNow();
  // Threads of a deadlock, and those stuck behind one, belong to the deadlock incident: also
  // while it is open on a sample that missed the cycle (one of its threads caught running for
  // a moment), when the thread left behind is past the threshold in the cycle's wait.
  std::set<std::int32_t> in_deadlock;
  for (const auto& [cycle, open] : deadlocks_) {
    for (const auto& [identity, tid] : cycle) {
      if (identity == o.process) in_deadlock.insert(tid);
    }
    const auto spurs = open.spurs.find(o.process);
    if (spurs == open.spurs.end()) continue;
    for (const auto& t : spurs->second) {
      if (t.pid == o.process.pid) in_deadlock.insert(t.tid.value);
    }
  }

  // The process was renamed (exec): its open hangs carry the new name from now on.
  for (auto& [signature, incident] : state.open) {
    if (setProcesses(incident, {IncidentProcess{o.process, o.process_name, o.process_title}})) {
      incident.updated_at = laterOf(now, incident.updated_at);
      events.push_back({IncidentEvent::Type::kUpdated, incident});
    }
  }

  // A capture stops the hung thread and those its chain leads to, and they are scheduled to
  // stop: a sample that ran meanwhile, and the next one (which compares with it), cannot tell
  // that a thread still in the same wait has run.
  const bool disturbed = o.disturbed.contains(o.process.pid);
  const bool cannot_tell = disturbed || state.disturbed;
  state.disturbed = disturbed;
  std::set<std::string> current;
  for (const auto& t : o.threads) {
    if (t.status != ObjectStatus::kBlocked || !t.wait || isIgnored(o, t.wait->type) ||
        in_deadlock.contains(t.id.tid.value)) {
      continue;
    }
    const auto& h = state.history.at(t.id.tid.value);
    const auto signature = hangSignature(t.id.tid, *t.wait);
    if (state.open.contains(signature)) {
      // An open hang goes on while the thread stays in that wait without running; an adopted
      // one (open when the service stopped) has nothing to compare with on its first sample.
      if (h.continued || h.first || cannot_tell) current.insert(signature);
      continue;
    }
    const auto waited = steady_now - h.since;
    if (waited < o.target->hang_threshold) continue;
    current.insert(signature);
    Incident incident = newIncident(IncidentKind::kHang, o, signature, {t.id}, now);
    incident.id = ids_.next();
    incident.chains = chainsOf(o, incident.threads);
    incident.spurs = spursOf(o.chains, incident.threads);
    annotateWaitTimes(o.process, incident.chains);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(waited);
    incident.summary = "thread " + nameOf(o, t.id) + " in " +
                       withTitle(o.process_name, o.process_title) + " (pid " +
                       std::to_string(o.process.pid.value) + ") blocked for " +
                       std::to_string(seconds.count()) + " s on " + waitKeyText(*t.wait);
    events.push_back({IncidentEvent::Type::kOpened, incident});
    state.open.emplace(signature, std::move(incident));
  }
  for (auto it = state.open.begin(); it != state.open.end();) {
    if (it->second.kind == IncidentKind::kHang && !current.contains(it->first)) {
      events.push_back(
          {IncidentEvent::Type::kResolved, resolved(it->second, "the thread moved on")});
      it = state.open.erase(it);
    } else {
      ++it;
    }
  }
}

Incident IncidentTracker::resolved(Incident incident, std::string reason) const {
  incident.state = IncidentState::kResolved;
  incident.resolved_at = laterOf(clock_.now(), incident.updated_at);
  incident.updated_at = *incident.resolved_at;
  incident.resolution = std::move(reason);
  return incident;
}

std::vector<IncidentEvent> IncidentTracker::forget(const ProcessIdentity& process,
                                                   std::string_view reason) {
  std::vector<IncidentEvent> events;
  if (auto it = processes_.find(process); it != processes_.end()) {
    for (auto& [signature, incident] : it->second.open) {
      events.push_back({IncidentEvent::Type::kResolved, resolved(incident, std::string(reason))});
    }
    processes_.erase(it);
  }
  leaveDeadlocks(process, false, reason, events);
  return events;
}

std::vector<IncidentEvent> IncidentTracker::exited(const ProcessIdentity& process) {
  auto events = forget(process, "the process exited");
  leaveDeadlocks(process, true, "the process exited", events);
  return events;
}

std::optional<std::chrono::milliseconds> IncidentTracker::waitTime(const ProcessIdentity& process,
                                                                   Tid tid) const {
  auto p = processes_.find(process);
  if (p == processes_.end()) return std::nullopt;
  auto h = p->second.history.find(tid.value);
  if (h == p->second.history.end()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steadyNow() -
                                                               h->second.since);
}

void IncidentTracker::annotateWaitTimes(const ProcessIdentity& process,
                                        std::span<WaitChain> chains) const {
  for (auto& chain : chains) {
    for (auto& node : chain.nodes) {
      if (!node.isThread() || node.thread.pid != process.pid ||
          node.status != ObjectStatus::kBlocked) {
        continue;
      }
      // The samples saw the wait for this long; the thread may have waited longer before the
      // first of them, which the platform's own reading (already on the node) can tell. A wait
      // first seen in this very sample was observed for no time at all: that is no wait time.
      const auto observed = waitTime(process, node.thread.tid);
      if (observed && observed->count() > 0 && (!node.wait_time || *node.wait_time < *observed)) {
        node.wait_time = observed;
      }
    }
  }
}

std::vector<IncidentEvent> IncidentTracker::adopt(std::vector<Incident> open) {
  std::vector<IncidentEvent> events;
  // The oldest first: of several records of one cycle, the first one opened goes on.
  std::sort(open.begin(), open.end(), [](const Incident& a, const Incident& b) {
    return std::tie(a.opened_at, a.id) < std::tie(b.opened_at, b.id);
  });
  std::set<std::int64_t> merged;
  for (auto& incident : open) {
    ids_.keepAbove(incident.id);
    if (incident.state != IncidentState::kOpen) continue;
    if (incident.processes.empty()) {
      incident.processes = {IncidentProcess{incident.process, incident.process_name}};
    }
    if (incident.kind != IncidentKind::kDeadlock) {
      // A hang, or a symptom's incident: it goes on while its watcher still reports it.
      processes_[incident.process].open.emplace(incident.signature, incident);
      continue;
    }
    auto it = findDeadlock(keyOf(incident));
    if (it == deadlocks_.end()) {
      OpenDeadlock d;
      d.observers.insert(incident.process);
      d.spurs[incident.process] = incident.spurs;
      for (const auto& c : incident.chains) d.chains.emplace(c.start, c);
      d.incident = std::move(incident);
      const auto key = keyOf(d.incident);
      deadlocks_.emplace(key, std::move(d));
      continue;
    }
    // Another record of a cycle already adopted: it joins that one, and resolves.
    OpenDeadlock& d = it->second;
    d.observers.insert(incident.process);
    d.spurs[incident.process] = incident.spurs;
    d.incident.spurs = unionOf(d.spurs);
    for (const auto& c : incident.chains) d.chains.try_emplace(c.start, c);
    d.incident.chains = valuesOf(d.chains);
    auto processes = d.incident.processes;
    for (const auto& p : incident.processes) {
      if (findProcess(processes, p.identity.pid) == nullptr) processes.push_back(p);
    }
    (void)setProcesses(d.incident, std::move(processes));
    merged.insert(d.incident.id);
    events.push_back({IncidentEvent::Type::kResolved,
                      resolved(std::move(incident),
                               "the same deadlock as incident " + std::to_string(d.incident.id))});
    // The merged record may know start times the first one did not.
    if (auto key = keyOf(d.incident); key != it->first) {
      auto node = deadlocks_.extract(it);
      node.key() = std::move(key);
      deadlocks_.insert(std::move(node));
    }
  }
  for (const auto& [cycle, d] : deadlocks_) {
    if (merged.contains(d.incident.id))
      events.push_back({IncidentEvent::Type::kUpdated, d.incident});
  }
  return events;
}

std::vector<Incident> IncidentTracker::openIncidents() const {
  std::vector<Incident> out;
  for (const auto& [cycle, d] : deadlocks_) out.push_back(d.incident);
  for (const auto& [process, state] : processes_) {
    for (const auto& [signature, incident] : state.open) out.push_back(incident);
  }
  return out;
}

std::vector<ProcessIdentity> IncidentTracker::trackedProcesses() const {
  std::set<ProcessIdentity> out;
  for (const auto& [process, state] : processes_) out.insert(process);
  for (const auto& [cycle, d] : deadlocks_) {
    for (const auto& p : d.incident.processes) out.insert(p.identity);
  }
  return {out.begin(), out.end()};
}

}  // namespace wctmon
