#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/incident_building.h"
#include "core/incident_tracker.h"
#include "model/format.h"

// The incident tracker's deadlocks: a cycle seen by the samples of one or more processes, kept
// open while one of them still shows it, ended by two samples that find it gone or by its
// processes leaving.

namespace wctmon {
namespace {

using incident_building::chainsOf;
using incident_building::CycleKey;
using incident_building::cycleOf;
using incident_building::deadlockProcesses;
using incident_building::deadlockSignature;
using incident_building::findProcess;
using incident_building::isMember;
using incident_building::isStopped;
using incident_building::isWithin;
using incident_building::laterOf;
using incident_building::nameOf;
using incident_building::newIncident;
using incident_building::processesText;
using incident_building::ProcessIndex;
using incident_building::processLabel;
using incident_building::recordWaits;
using incident_building::sameCycle;
using incident_building::setProcesses;
using incident_building::unionOf;
using incident_building::valuesOf;

/// How many threads of a cycle its summary names.
constexpr std::size_t kNamedCycleThreads = 16;

}  // namespace

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
      incident.id = ids_.next();
      open.observers.insert(o.process);
      open.spurs[o.process] = d.spurs;
      incident.spurs = d.spurs;
      for (auto& c : chainsOf(o, threads)) open.chains.emplace(c.start, std::move(c));
      recordWaits(open.waits, o, threads);
      incident.chains = valuesOf(open.chains);
      annotateWaitTimes(o.process, incident.chains);
      (void)setProcesses(incident, deadlockProcesses(incident, cycle, incident.spurs, &o));
      std::vector<IncidentProcess> members;
      std::set<Pid> listed;
      const ProcessIndex known(incident.processes);
      for (const auto& [identity, tid] : cycle) {
        if (!listed.insert(identity.pid).second) continue;
        const auto* p = known.find(identity.pid);
        members.push_back(p != nullptr ? *p : IncidentProcess{identity, "?"});
      }
      // A ring of thousands of threads is named by its first ones: the rest are in its threads.
      std::string names;
      const auto named = std::min(threads.size(), kNamedCycleThreads);
      for (std::size_t i = 0; i < named; ++i) {
        names += (names.empty() ? "" : ", ") + nameOf(o, threads[i]);
      }
      if (named < threads.size())
        names += " and " + std::to_string(threads.size() - named) + " more";
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
    // A sample that ran while threads of the cycle were stopped for its evidence (a capture
    // stops each thread in turn, and its wait restarts after) says nothing about it.
    const bool disturbed = std::any_of(cycle.begin(), cycle.end(), [&](const auto& entry) {
      return o.disturbed.contains(entry.first.pid);
    });
    if (seen.contains(cycle) || disturbed) {
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
    } else if (member && o.target->out_of_proc &&
               (leftCycle(o, cycle, open) || (!o.others_left_out && !shown_elsewhere))) {
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

bool IncidentTracker::leadsElsewhere(const ProcessIdentity& process) const {
  bool member = false;
  for (const auto& [cycle, open] : deadlocks_) {
    if (isWithin(cycle, process.pid) || !isMember(cycle, process)) continue;
    member = true;
    // Observers are ordered: the first of them leads; any other leaves the cycle to it.
    if (open.observers.empty() || *open.observers.begin() == process) return false;
  }
  return member;
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
  std::unordered_map<std::int32_t, const ThreadSample*> by_tid;
  by_tid.reserve(o.threads.size());
  for (const auto& t : o.threads) by_tid.emplace(t.id.tid.value, &t);
  for (const auto& [identity, tid] : cycle) {
    if (identity != o.process) continue;
    const auto found = by_tid.find(tid);
    const ThreadSample* t = found == by_tid.end() ? nullptr : found->second;
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

}  // namespace wctmon
