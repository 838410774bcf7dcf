#include "core/incident_tracker.h"

#include <algorithm>
#include <set>

#include "core/format.h"

namespace wctmon {
namespace {

std::string deadlockSignature(const Deadlock& d) {
  std::string s = "deadlock";
  for (const auto& t : d.threads) s += " " + threadLabel(t);
  return s;
}

std::string hangSignature(Tid tid, const WaitObject& wait) {
  return "hang [" + std::to_string(tid.value) + "] " + waitKeyText(wait);
}

std::vector<WaitChain> chainsOf(const std::vector<WaitChain>& chains,
                                const std::vector<ThreadRef>& threads) {
  std::vector<WaitChain> out;
  for (const auto& c : chains) {
    if (std::find(threads.begin(), threads.end(), c.start) != threads.end()) out.push_back(c);
  }
  return out;
}

const ThreadSample* findSample(const std::vector<ThreadSample>& threads, Tid tid) {
  for (const auto& t : threads) {
    if (t.id.tid == tid) return &t;
  }
  return nullptr;
}

std::string nameOf(const ProcessObservation& o, ThreadRef t) {
  if (t.pid == o.process.pid) {
    if (const auto* s = findSample(o.threads, t.tid); s != nullptr && !s->name.empty()) {
      return threadLabel(t) + " " + s->name;
    }
  }
  return threadLabel(t);
}

bool isIgnored(const ProcessObservation& o, ObjectType type) {
  return std::find(o.ignore_waits.begin(), o.ignore_waits.end(), type) != o.ignore_waits.end();
}

/// Threads that wait, directly or through others, on `roots`, within one process's chains.
std::vector<ThreadRef> spursOf(const std::vector<WaitChain>& chains,
                               const std::vector<ThreadRef>& roots) {
  std::vector<ThreadRef> out;
  for (const auto& c : chains) {
    if (std::find(roots.begin(), roots.end(), c.start) != roots.end()) continue;
    for (std::size_t i = 2; i < c.nodes.size(); i += 2) {
      if (std::find(roots.begin(), roots.end(), c.nodes[i].thread) != roots.end()) {
        out.push_back(c.start);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Incident newIncident(IncidentKind kind, const ProcessObservation& o, std::string signature,
                     std::vector<ThreadRef> threads, Clock::TimePoint now) {
  Incident incident;
  incident.kind = kind;
  incident.process = o.process;
  incident.process_name = o.process_name;
  incident.target = o.target;
  incident.signature = std::move(signature);
  incident.threads = std::move(threads);
  incident.opened_at = now;
  incident.updated_at = now;
  return incident;
}

}  // namespace

std::string waitKeyText(const WaitObject& wait) {
  return std::string(toString(wait.type)) + " " + wait.name;
}

std::vector<IncidentEvent> IncidentTracker::observe(const ProcessObservation& o) {
  std::vector<IncidentEvent> events;
  auto& state = processes_[o.process];
  updateHistory(o, state, clock_.now());
  trackDeadlocks(o, state, events);
  trackHangs(o, state, events);
  return events;
}

void IncidentTracker::updateHistory(const ProcessObservation& o, ProcessState& state,
                                    Clock::TimePoint now) {
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

void IncidentTracker::trackDeadlocks(const ProcessObservation& o, ProcessState& state,
                                     std::vector<IncidentEvent>& events) {
  const auto now = clock_.now();
  std::set<std::string> seen;
  for (const auto& d : o.deadlocks) {
    const auto signature = deadlockSignature(d);
    seen.insert(signature);
    auto it = state.open.find(signature);
    if (it == state.open.end()) {
      Incident incident = newIncident(IncidentKind::kDeadlock, o, signature, d.threads, now);
      incident.spurs = d.spurs;
      incident.chains = chainsOf(o.chains, d.threads);
      annotateWaitTimes(o.process, incident.chains);
      std::string names;
      for (const auto& t : d.threads) names += (names.empty() ? "" : ", ") + nameOf(o, t);
      incident.summary = "deadlock of " + std::to_string(d.threads.size()) + " thread(s) in " +
                         o.process_name + " (pid " + std::to_string(o.process.pid.value) +
                         "): " + names;
      events.push_back({IncidentEvent::Type::kOpened, incident});
      state.open.emplace(signature, std::move(incident));
      continue;
    }
    Incident& incident = it->second;
    if (incident.spurs != d.spurs || incident.chains.empty()) {
      // Something changed around the cycle (more threads piled up behind it): worth a record.
      incident.spurs = d.spurs;
      incident.updated_at = now;
      incident.chains = chainsOf(o.chains, d.threads);
      annotateWaitTimes(o.process, incident.chains);
      events.push_back({IncidentEvent::Type::kUpdated, incident});
    }
  }
  for (auto it = state.open.begin(); it != state.open.end();) {
    if (it->second.kind == IncidentKind::kDeadlock && !seen.contains(it->first)) {
      events.push_back({IncidentEvent::Type::kResolved, resolved(it->second, "the cycle is gone")});
      it = state.open.erase(it);
    } else {
      ++it;
    }
  }
}

void IncidentTracker::trackHangs(const ProcessObservation& o, ProcessState& state,
                                 std::vector<IncidentEvent>& events) {
  const auto now = clock_.now();
  // Threads of a deadlock, and those stuck behind one, belong to the deadlock incident.
  std::set<std::int32_t> in_deadlock;
  for (const auto& d : o.deadlocks) {
    for (const auto& t : d.threads) {
      if (t.pid == o.process.pid) in_deadlock.insert(t.tid.value);
    }
    for (const auto& t : d.spurs) {
      if (t.pid == o.process.pid) in_deadlock.insert(t.tid.value);
    }
  }

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
      if (h.continued || h.first) current.insert(signature);
      continue;
    }
    if (now - h.since < o.hang_threshold) continue;
    current.insert(signature);
    Incident incident = newIncident(IncidentKind::kHang, o, signature, {t.id}, now);
    incident.chains = chainsOf(o.chains, incident.threads);
    incident.spurs = spursOf(o.chains, incident.threads);
    annotateWaitTimes(o.process, incident.chains);
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - h.since);
    incident.summary = "thread " + nameOf(o, t.id) + " in " + o.process_name + " (pid " +
                       std::to_string(o.process.pid.value) + ") blocked for " +
                       std::to_string(waited.count()) + " s on " + waitKeyText(*t.wait);
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
  incident.resolved_at = clock_.now();
  incident.updated_at = *incident.resolved_at;
  incident.resolution = std::move(reason);
  return incident;
}

std::vector<IncidentEvent> IncidentTracker::forget(const ProcessIdentity& process,
                                                   std::string_view reason) {
  std::vector<IncidentEvent> events;
  auto it = processes_.find(process);
  if (it == processes_.end()) return events;
  for (auto& [signature, incident] : it->second.open) {
    events.push_back({IncidentEvent::Type::kResolved, resolved(incident, std::string(reason))});
  }
  processes_.erase(it);
  return events;
}

std::optional<std::chrono::milliseconds> IncidentTracker::waitTime(const ProcessIdentity& process,
                                                                   Tid tid) const {
  auto p = processes_.find(process);
  if (p == processes_.end()) return std::nullopt;
  auto h = p->second.history.find(tid.value);
  if (h == p->second.history.end()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - h->second.since);
}

void IncidentTracker::annotateWaitTimes(const ProcessIdentity& process,
                                        std::vector<WaitChain>& chains) const {
  for (auto& chain : chains) {
    for (auto& node : chain.nodes) {
      if (node.isThread() && node.thread.pid == process.pid &&
          node.status == ObjectStatus::kBlocked) {
        node.wait_time = waitTime(process, node.thread.tid);
      }
    }
  }
}

void IncidentTracker::adopt(const std::vector<Incident>& open) {
  for (const auto& incident : open) {
    if (incident.state != IncidentState::kOpen) continue;
    auto& state = processes_[incident.process];
    state.open.emplace(incident.signature, incident);
  }
}

void IncidentTracker::assignId(const ProcessIdentity& process, const std::string& signature,
                               std::int64_t id) {
  auto p = processes_.find(process);
  if (p == processes_.end()) return;
  auto it = p->second.open.find(signature);
  if (it != p->second.open.end()) it->second.id = id;
}

void IncidentTracker::attachEvidence(const ProcessIdentity& process, const std::string& signature,
                                     const std::vector<ThreadCapture>& evidence) {
  auto p = processes_.find(process);
  if (p == processes_.end()) return;
  auto it = p->second.open.find(signature);
  if (it != p->second.open.end()) it->second.evidence = evidence;
}

std::vector<Incident> IncidentTracker::openIncidents() const {
  std::vector<Incident> out;
  for (const auto& [process, state] : processes_) {
    for (const auto& [signature, incident] : state.open) out.push_back(incident);
  }
  return out;
}

std::vector<ProcessIdentity> IncidentTracker::trackedProcesses() const {
  std::vector<ProcessIdentity> out;
  for (const auto& [process, state] : processes_) out.push_back(process);
  return out;
}

}  // namespace wctmon
