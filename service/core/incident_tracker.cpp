#include "core/incident_tracker.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "model/format.h"

namespace wctmon {
namespace {

/// The time of an incident's change: the wall clock's, but never before the incident's last
/// change. After the wall clock is set back, an incident opened before still reads as opened,
/// then updated, then resolved, in that order.
Incident::TimePoint laterOf(Incident::TimePoint now, Incident::TimePoint last) {
  return std::max(now, last);
}

std::string deadlockSignature(const std::vector<ThreadRef>& threads) {
  std::string s = "deadlock";
  for (const auto& t : threads) s += " " + threadLabel(t);
  return s;
}

std::string hangSignature(Tid tid, const WaitObject& wait) {
  return "hang [" + std::to_string(tid.value) + "] " + waitKeyText(wait);
}

/// The chains of `threads`, their thread nodes under the names the observation knows for their
/// processes: a sample may still carry the name a process had before it ran another program.
std::vector<WaitChain> chainsOf(const ProcessObservation& o,
                                const std::vector<ThreadRef>& threads) {
  std::vector<WaitChain> out;
  for (const auto& c : o.chains) {
    if (std::find(threads.begin(), threads.end(), c.start) == threads.end()) continue;
    out.push_back(c);
    for (auto& node : out.back().nodes) {
      if (!node.isThread()) continue;
      if (node.thread.pid == o.process.pid) {
        node.process_name = o.process_name;
      } else {
        for (const auto& p : o.peers) {
          if (p.identity.pid == node.thread.pid) node.process_name = p.name;
        }
      }
    }
  }
  return out;
}

const ThreadSample* findSample(const std::vector<ThreadSample>& threads, Tid tid) {
  for (const auto& t : threads) {
    if (t.id.tid == tid) return &t;
  }
  return nullptr;
}

/// A thread with its name: from the process's own sample, or, for a thread of another process,
/// from the chains that reached it.
std::string nameOf(const ProcessObservation& o, ThreadRef t) {
  if (t.pid == o.process.pid) {
    if (const auto* s = findSample(o.threads, t.tid); s != nullptr && !s->name.empty()) {
      return threadLabel(t) + " " + s->name;
    }
    return threadLabel(t);
  }
  for (const auto& c : o.chains) {
    for (const auto& n : c.nodes) {
      if (n.isThread() && n.thread == t && !n.thread_name.empty()) {
        return threadLabel(t) + " " + n.thread_name;
      }
    }
  }
  return threadLabel(t);
}

/// Held by a signal or a tracer: it shows a kernel wait, and resumes the call it was in.
bool isStopped(const ThreadSample& t) {
  return t.state == RunState::kStopped || t.state == RunState::kTraced;
}

/// Notes what the process's own threads of a cycle wait on, as its sample shows the cycle.
void recordWaits(std::map<ThreadRef, std::pair<ObjectType, std::uint64_t>>& waits,
                 const ProcessObservation& o, const std::vector<ThreadRef>& threads) {
  for (const auto& t : o.threads) {
    if (!t.wait || isStopped(t) ||
        std::find(threads.begin(), threads.end(), t.id) == threads.end()) {
      continue;
    }
    waits[t.id] = {t.wait->type, t.wait->key};
  }
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

const IncidentProcess* findProcess(const std::vector<IncidentProcess>& processes, Pid pid) {
  for (const auto& p : processes) {
    if (p.identity.pid == pid) return &p;
  }
  return nullptr;
}

/// The process `pid` as the observation knows it: itself, or one of its peers.
std::optional<IncidentProcess> processOf(const ProcessObservation& o, Pid pid) {
  if (pid == o.process.pid) return IncidentProcess{o.process, o.process_name, o.process_title};
  if (const auto* p = findProcess(o.peers, pid)) return *p;
  return std::nullopt;
}

/// "server (pid 10)"
std::string processLabel(const IncidentProcess& p) {
  return withTitle(p.name, p.title) + " (pid " + std::to_string(p.identity.pid.value) + ")";
}

/// "a (pid 1)", "a (pid 1) and b (pid 2)", "a (pid 1), b (pid 2) and c (pid 3)".
std::string processesText(const std::vector<IncidentProcess>& processes) {
  std::string out;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (i > 0) out += i + 1 == processes.size() ? " and " : ", ";
    out += processLabel(processes[i]);
  }
  return out;
}

/// Replaces the label of a renamed process in a summary written under its old name.
void renameIn(std::string& text, const IncidentProcess& before, const std::string& name) {
  const auto old_label = processLabel(before);
  const auto new_label = processLabel(IncidentProcess{before.identity, name});
  for (auto pos = text.find(old_label); pos != std::string::npos;
       pos = text.find(old_label, pos + new_label.size())) {
    text.replace(pos, old_label.size(), new_label);
  }
}

/// Takes `processes` as the incident's list, renaming it in the summary where names changed.
/// Returns whether anything changed.
bool setProcesses(Incident& incident, std::vector<IncidentProcess> processes) {
  if (processes.empty() || processes == incident.processes) return false;
  for (const auto& now : processes) {
    for (const auto& before : incident.processes) {
      if (before.identity == now.identity && before.name != now.name) {
        renameIn(incident.summary, before, now.name);
      }
    }
  }
  incident.processes = std::move(processes);
  incident.process = incident.processes.front().identity;
  incident.process_name = incident.processes.front().name;
  return true;
}

Incident newIncident(IncidentKind kind, const ProcessObservation& o, std::string signature,
                     std::vector<ThreadRef> threads, Clock::TimePoint now) {
  Incident incident;
  incident.kind = kind;
  incident.process = o.process;
  incident.process_name = o.process_name;
  incident.processes = {IncidentProcess{o.process, o.process_name, o.process_title}};
  incident.target = o.target;
  incident.signature = std::move(signature);
  incident.threads = std::move(threads);
  incident.opened_at = now;
  incident.updated_at = now;
  return incident;
}

template <typename Key>
std::vector<ThreadRef> unionOf(const std::map<Key, std::vector<ThreadRef>>& lists) {
  std::vector<ThreadRef> out;
  for (const auto& [key, list] : lists) out.insert(out.end(), list.begin(), list.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

template <typename Key>
std::vector<WaitChain> valuesOf(const std::map<Key, WaitChain>& chains) {
  std::vector<WaitChain> out;
  out.reserve(chains.size());
  for (const auto& [key, chain] : chains) out.push_back(chain);
  return out;
}

using CycleKey = std::vector<std::pair<ProcessIdentity, std::int32_t>>;

/// The cycle of `threads`, each with its process's identity as `identify` knows it (start time
/// 0 when it does not).
template <typename Identify>
CycleKey cycleOf(const std::vector<ThreadRef>& threads, Identify identify) {
  CycleKey out;
  out.reserve(threads.size());
  for (const auto& t : threads) {
    out.emplace_back(identify(t.pid).value_or(ProcessIdentity{t.pid, 0}), t.tid.value);
  }
  std::sort(out.begin(), out.end());
  return out;
}

CycleKey cycleOf(const ProcessObservation& o, const std::vector<ThreadRef>& threads) {
  return cycleOf(threads, [&o](Pid pid) -> std::optional<ProcessIdentity> {
    if (auto p = processOf(o, pid)) return p->identity;
    return std::nullopt;
  });
}

/// The same threads of the same processes, where a start time of 0 (not known) matches any.
bool sameCycle(const CycleKey& a, const CycleKey& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& [pa, ta] = a[i];
    const auto& [pb, tb] = b[i];
    if (pa.pid != pb.pid || ta != tb) return false;
    if (pa.start_time != pb.start_time && pa.start_time != 0 && pb.start_time != 0) return false;
  }
  return true;
}

bool isMember(const CycleKey& cycle, const ProcessIdentity& process) {
  return std::any_of(cycle.begin(), cycle.end(),
                     [&](const auto& entry) { return entry.first == process; });
}

/// Whether every thread of the cycle belongs to `pid` (any sample of it shows the cycle).
bool isWithin(const CycleKey& cycle, Pid pid) {
  return std::all_of(cycle.begin(), cycle.end(),
                     [&](const auto& entry) { return entry.first.pid == pid; });
}

/// Every process of a deadlock, the first one first, then those of its cycle and of the threads
/// behind it; each under the name the observation (when given) knows, else as listed before.
/// A process known by its pid alone is left out until a sample names it.
std::vector<IncidentProcess> deadlockProcesses(const Incident& incident, const CycleKey& cycle,
                                               const std::vector<ThreadRef>& spurs,
                                               const ProcessObservation* o) {
  std::vector<IncidentProcess> out;
  const auto add = [&](Pid pid, std::optional<ProcessIdentity> identity) {
    if (findProcess(out, pid) != nullptr) return;
    if (o != nullptr) {
      auto p = processOf(*o, pid);
      if (p && (!identity || identity->start_time == 0 || p->identity == *identity)) {
        out.push_back(std::move(*p));
        return;
      }
    }
    if (const auto* p = findProcess(incident.processes, pid)) out.push_back(*p);
  };
  add(incident.process.pid, incident.process);
  for (const auto& [identity, tid] : cycle) add(identity.pid, identity);
  for (const auto& t : spurs) add(t.pid, std::nullopt);
  return out;
}

}  // namespace

std::string waitKeyText(const WaitObject& wait) {
  return std::string(toString(wait.type)) + " " + wait.name;
}

std::vector<IncidentEvent> IncidentTracker::observe(const ProcessObservation& o) {
  std::vector<IncidentEvent> events;
  auto& state = processes_[o.process];
  state.sees_other_processes = o.sees_other_processes;
  updateHistory(o, state, clock_.steadyNow());
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

void IncidentTracker::trackDeadlocks(const ProcessObservation& o,
                                     std::vector<IncidentEvent>& events) {
  const auto now = clock_.now();
  std::set<CycleKey> seen;
  for (const auto& d : o.deadlocks) {
    auto threads = d.threads;
    std::sort(threads.begin(), threads.end());
    const auto cycle = cycleOf(o, threads);
    auto it = findDeadlock(cycle);
    if (it == deadlocks_.end()) {
      OpenDeadlock open;
      Incident& incident = open.incident;
      incident = newIncident(IncidentKind::kDeadlock, o, deadlockSignature(threads), threads, now);
      open.observers.insert(o.process);
      open.spurs[o.process] = d.spurs;
      incident.spurs = d.spurs;
      for (auto& c : chainsOf(o, threads)) open.chains.emplace(c.start, std::move(c));
      recordWaits(open.waits, o, threads);
      incident.chains = valuesOf(open.chains);
      annotateWaitTimes(o.process, incident.chains);
      (void)setProcesses(incident, deadlockProcesses(incident, cycle, incident.spurs, &o));
      std::vector<IncidentProcess> members;
      for (const auto& [identity, tid] : cycle) {
        if (findProcess(members, identity.pid) != nullptr) continue;
        const auto* p = findProcess(incident.processes, identity.pid);
        members.push_back(p != nullptr ? *p : IncidentProcess{identity, "?"});
      }
      std::string names;
      for (const auto& t : threads) names += (names.empty() ? "" : ", ") + nameOf(o, t);
      incident.summary = "deadlock of " + countOf(threads.size(), "thread") + " in " +
                         processesText(members) + ": " + names;
      events.push_back({IncidentEvent::Type::kOpened, incident});
      seen.insert(cycle);
      deadlocks_.emplace(cycle, std::move(open));
      continue;
    }
    seen.insert(it->first);
    OpenDeadlock& open = it->second;
    Incident& incident = open.incident;
    open.observers.insert(o.process);
    open.doubted_by.clear();
    recordWaits(open.waits, o, threads);
    // Each process's sample tells its own side: its chains, the threads it sees behind the
    // cycle. The incident holds them all and changes when something new piles up.
    bool changed = false;
    open.spurs[o.process] = d.spurs;
    if (auto spurs = unionOf(open.spurs); spurs != incident.spurs) {
      incident.spurs = std::move(spurs);
      changed = true;
    }
    for (auto& c : chainsOf(o, threads)) {
      const bool first = !open.chains.contains(c.start);
      annotateWaitTimes(o.process, std::span(&c, 1));
      open.chains.insert_or_assign(c.start, std::move(c));
      changed = changed || first;
    }
    changed = setProcesses(incident, deadlockProcesses(incident, it->first, incident.spurs, &o)) ||
              changed;
    if (changed) {
      incident.updated_at = laterOf(now, incident.updated_at);
      incident.chains = valuesOf(open.chains);
      events.push_back({IncidentEvent::Type::kUpdated, incident});
    }
  }

  // Cycles this sample does not show. A sample sees the process's own threads as they are, but
  // may see other processes' threads as they were a few samples ago (their threads are re-read
  // less often): a stale view can hide a cycle, never invent one (a cycle counts only once a
  // second read of its threads confirms it). So a cycle within the process is gone when its
  // sample no longer shows it; a cycle across processes when one of the process's own threads
  // of the cycle left its wait, or when no process still shows it. Either only in two samples
  // of the process in a row: a thread of a cycle runs for a moment when a signal, or the ptrace
  // stop that takes the evidence, restarts its call, and on a loaded machine that moment can
  // outlast a sample that then sees it running (the deadlock was resolved, then opened again
  // as a second incident).
  for (auto it = deadlocks_.begin(); it != deadlocks_.end();) {
    const auto& cycle = it->first;
    OpenDeadlock& open = it->second;
    if (seen.contains(cycle)) {
      ++it;
      continue;
    }
    const bool member = isMember(cycle, o.process);
    // Whether this process's samples showed the cycle: up to the last one, or up to the one
    // before that already missed it.
    const bool observer =
        open.observers.erase(o.process) > 0 || open.doubted_by.contains(o.process);
    const bool shown_elsewhere = !open.observers.empty();
    std::optional<std::string> why;
    if (member && isWithin(cycle, o.process.pid)) {
      why = "the cycle is gone";
    } else if (member && o.sees_other_processes &&
               (leftCycle(o, cycle, open) || !shown_elsewhere)) {
      why = "the cycle is gone";
    } else if (!member && observer && !shown_elsewhere) {
      // Only a process whose samples showed the cycle can tell it is gone: every other one
      // (another target) would resolve a cycle whose own process merely missed it once.
      why = "no watched process shows the cycle any more";
    }
    if (!why) {
      open.doubted_by.erase(o.process);
    } else if (open.doubted_by.insert(o.process).second) {
      why.reset();  // once more, to be sure
    }
    if (why) {
      events.push_back({IncidentEvent::Type::kResolved, resolved(open.incident, std::move(*why))});
      it = deadlocks_.erase(it);
    } else {
      ++it;
    }
  }
}

IncidentTracker::Deadlocks::iterator IncidentTracker::findDeadlock(const CycleKey& cycle) {
  if (auto it = deadlocks_.find(cycle); it != deadlocks_.end()) return it;
  // Known before by pid alone (a peer that had exited from the catalog's view, an incident
  // stored by a version that kept no start times of other processes): the same cycle, now
  // keyed by what is known of it.
  for (auto it = deadlocks_.begin(); it != deadlocks_.end(); ++it) {
    if (!sameCycle(it->first, cycle)) continue;
    CycleKey better = it->first;
    for (std::size_t i = 0; i < better.size(); ++i) {
      if (better[i].first.start_time == 0) better[i].first = cycle[i].first;
    }
    if (better == it->first) return it;
    auto node = deadlocks_.extract(it);
    node.key() = std::move(better);
    return deadlocks_.insert(std::move(node)).position;
  }
  return deadlocks_.end();
}

IncidentTracker::CycleKey IncidentTracker::keyOf(const Incident& incident) {
  return cycleOf(incident.threads, [&incident](Pid pid) -> std::optional<ProcessIdentity> {
    if (const auto* p = findProcess(incident.processes, pid)) return p->identity;
    if (pid == incident.process.pid) return incident.process;
    return std::nullopt;
  });
}

bool IncidentTracker::leftCycle(const ProcessObservation& o, const CycleKey& cycle,
                                const OpenDeadlock& d) {
  for (const auto& [identity, tid] : cycle) {
    if (identity != o.process) continue;
    const auto* t = findSample(o.threads, Tid{tid});
    if (t == nullptr || t->status != ObjectStatus::kBlocked || !t->wait) return true;
    if (isStopped(*t)) continue;
    auto w = d.waits.find(t->id);
    if (w != d.waits.end() && w->second != std::pair(t->wait->type, t->wait->key)) return true;
  }
  return false;
}

bool IncidentTracker::stillWatched(const CycleKey& cycle, const OpenDeadlock& d,
                                   const ProcessIdentity& except) const {
  if (std::any_of(d.observers.begin(), d.observers.end(),
                  [&](const ProcessIdentity& p) { return p != except; })) {
    return true;
  }
  for (const auto& [identity, tid] : cycle) {
    if (identity == except) continue;
    auto p = processes_.find(identity);
    if (p != processes_.end() && (p->second.sees_other_processes || isWithin(cycle, identity.pid)))
      return true;
  }
  return false;
}

void IncidentTracker::trackHangs(const ProcessObservation& o, ProcessState& state,
                                 std::vector<IncidentEvent>& events) {
  const auto now = clock_.now();
  // How long a thread waits is measured on the steady clock: a step of the wall clock (NTP, a
  // changed date) must neither open a hang early nor hold one back.
  const auto steady_now = clock_.steadyNow();
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

  // The process was renamed (exec): its open hangs carry the new name from now on.
  for (auto& [signature, incident] : state.open) {
    if (setProcesses(incident, {IncidentProcess{o.process, o.process_name, o.process_title}})) {
      incident.updated_at = laterOf(now, incident.updated_at);
      events.push_back({IncidentEvent::Type::kUpdated, incident});
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
    const auto waited = steady_now - h.since;
    if (waited < o.hang_threshold) continue;
    current.insert(signature);
    Incident incident = newIncident(IncidentKind::kHang, o, signature, {t.id}, now);
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

void IncidentTracker::leaveDeadlocks(const ProcessIdentity& process, bool exited,
                                     std::string_view reason, std::vector<IncidentEvent>& events) {
  for (auto it = deadlocks_.begin(); it != deadlocks_.end();) {
    const auto& cycle = it->first;
    OpenDeadlock& open = it->second;
    const bool member = isMember(cycle, process);
    if (exited && member) {
      std::string why(reason);
      if (!isWithin(cycle, process.pid)) {
        const auto* p = findProcess(open.incident.processes, process.pid);
        why = p != nullptr ? processLabel(*p) + " exited"
                           : "pid " + std::to_string(process.pid.value) + " exited";
      }
      events.push_back({IncidentEvent::Type::kResolved, resolved(open.incident, std::move(why))});
      it = deadlocks_.erase(it);
      continue;
    }
    const bool observer = open.observers.erase(process) > 0;
    if ((member || observer) && !stillWatched(cycle, open, process)) {
      events.push_back(
          {IncidentEvent::Type::kResolved, resolved(open.incident, std::string(reason))});
      it = deadlocks_.erase(it);
      continue;
    }
    ++it;
  }
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
    if (incident.state != IncidentState::kOpen) continue;
    if (incident.processes.empty()) {
      incident.processes = {IncidentProcess{incident.process, incident.process_name}};
    }
    if (incident.kind == IncidentKind::kHang) {
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

void IncidentTracker::assignId(const Incident& incident, std::int64_t id) {
  if (incident.kind == IncidentKind::kDeadlock) {
    if (auto it = deadlocks_.find(keyOf(incident)); it != deadlocks_.end())
      it->second.incident.id = id;
    return;
  }
  auto p = processes_.find(incident.process);
  if (p == processes_.end()) return;
  auto it = p->second.open.find(incident.signature);
  if (it != p->second.open.end()) it->second.id = id;
}

void IncidentTracker::attachEvidence(const Incident& incident,
                                     const std::vector<ThreadCapture>& evidence) {
  // Captured after the decision: the incident may have ended meanwhile, and another with the
  // same threads opened; only the one it was captured for takes it.
  if (incident.kind == IncidentKind::kDeadlock) {
    if (auto it = deadlocks_.find(keyOf(incident));
        it != deadlocks_.end() && it->second.incident.id == incident.id)
      it->second.incident.evidence = evidence;
    return;
  }
  auto p = processes_.find(incident.process);
  if (p == processes_.end()) return;
  auto it = p->second.open.find(incident.signature);
  if (it != p->second.open.end() && it->second.id == incident.id) it->second.evidence = evidence;
}

std::vector<Incident> IncidentTracker::openIncidents() const {
  std::vector<Incident> out;
  for (const auto& [cycle, d] : deadlocks_) out.push_back(d.incident);
  for (const auto& [process, state] : processes_) {
    for (const auto& [signature, incident] : state.open) out.push_back(incident);
  }
  return out;
}

std::optional<IncidentKind> IncidentTracker::openKindOf(const ProcessIdentity& process) const {
  for (const auto& [cycle, d] : deadlocks_) {
    if (d.incident.process == process) return IncidentKind::kDeadlock;
  }
  std::optional<IncidentKind> kind;
  for (const auto& [owner, state] : processes_) {
    for (const auto& [signature, incident] : state.open) {
      if (incident.process != process) continue;
      if (incident.kind == IncidentKind::kDeadlock) return IncidentKind::kDeadlock;
      kind = incident.kind;
    }
  }
  return kind;
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
