#include "core/incident_building.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "model/format.h"

namespace wctmon::incident_building {

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

std::vector<WaitChain> chainsOf(const ProcessObservation& o,
                                const std::vector<ThreadRef>& threads) {
  std::vector<WaitChain> out;
  const std::unordered_set<ThreadRef> wanted(threads.begin(), threads.end());
  for (const auto& c : o.chains) {
    if (!wanted.contains(c.start)) continue;
    out.push_back(c);
    for (auto& node : out.back().nodes) {
      if (!node.isThread()) continue;
      if (node.thread.pid == o.process.pid) {
        node.process_name = o.process_name;
      } else if (const auto* p = peerOf(o, node.thread.pid)) {
        node.process_name = p->name;
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

bool isStopped(const ThreadSample& t) {
  return t.state == RunState::kStopped || t.state == RunState::kTraced;
}

void recordWaits(std::map<ThreadRef, std::pair<ObjectType, std::uint64_t>>& waits,
                 const ProcessObservation& o, const std::vector<ThreadRef>& threads) {
  const std::unordered_set<ThreadRef> wanted(threads.begin(), threads.end());
  for (const auto& t : o.threads) {
    if (!t.wait || isStopped(t) || !wanted.contains(t.id)) continue;
    waits[t.id] = {t.wait->type, t.wait->key};
  }
}

bool isIgnored(const ProcessObservation& o, ObjectType type) {
  return std::find(o.target->ignore_waits.begin(), o.target->ignore_waits.end(), type) !=
         o.target->ignore_waits.end();
}

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

const IncidentProcess* peerOf(const ProcessObservation& o, Pid pid) {
  const auto it = std::lower_bound(
      o.peers.begin(), o.peers.end(), pid,
      [](const IncidentProcess& p, Pid wanted) { return p.identity.pid < wanted; });
  return it != o.peers.end() && it->identity.pid == pid ? &*it : nullptr;
}

std::optional<IncidentProcess> processOf(const ProcessObservation& o, Pid pid) {
  if (pid == o.process.pid) return IncidentProcess{o.process, o.process_name, o.process_title};
  if (const auto* p = peerOf(o, pid)) return *p;
  return std::nullopt;
}

ProcessIndex::ProcessIndex(const std::vector<IncidentProcess>& processes) {
  by_pid_.reserve(processes.size());
  for (const auto& p : processes) by_pid_.emplace(p.identity.pid.value, &p);
}

const IncidentProcess* ProcessIndex::find(Pid pid) const {
  const auto it = by_pid_.find(pid.value);
  return it != by_pid_.end() ? it->second : nullptr;
}

std::string processLabel(const IncidentProcess& p) {
  return withTitle(p.name, p.title) + " (pid " + std::to_string(p.identity.pid.value) + ")";
}

std::string processesText(const std::vector<IncidentProcess>& processes) {
  std::string out;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (i > 0) out += i + 1 == processes.size() ? " and " : ", ";
    out += processLabel(processes[i]);
  }
  return out;
}

void renameIn(std::string& text, const IncidentProcess& before, const std::string& name) {
  const auto old_label = processLabel(before);
  const auto new_label = processLabel(IncidentProcess{before.identity, name});
  for (auto pos = text.find(old_label); pos != std::string::npos;
       pos = text.find(old_label, pos + new_label.size())) {
    text.replace(pos, old_label.size(), new_label);
  }
}

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
  incident.target = o.target->name;
  incident.signature = std::move(signature);
  incident.threads = std::move(threads);
  incident.opened_at = now;
  incident.updated_at = now;
  return incident;
}

CycleKey cycleOf(const ProcessObservation& o, const std::vector<ThreadRef>& threads) {
  return cycleOf(threads, [&o](Pid pid) -> std::optional<ProcessIdentity> {
    if (auto p = processOf(o, pid)) return p->identity;
    return std::nullopt;
  });
}

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

bool isWithin(const CycleKey& cycle, Pid pid) {
  return std::all_of(cycle.begin(), cycle.end(),
                     [&](const auto& entry) { return entry.first.pid == pid; });
}

std::vector<IncidentProcess> deadlockProcesses(const Incident& incident, const CycleKey& cycle,
                                               const std::vector<ThreadRef>& spurs,
                                               const ProcessObservation* o) {
  std::vector<IncidentProcess> out;
  std::unordered_set<std::int32_t> added;
  const ProcessIndex known(incident.processes);
  const auto add = [&](Pid pid, std::optional<ProcessIdentity> identity) {
    if (!added.insert(pid.value).second) return;
    if (o != nullptr) {
      auto p = processOf(*o, pid);
      if (p && (!identity || identity->start_time == 0 || p->identity == *identity)) {
        out.push_back(std::move(*p));
        return;
      }
    }
    if (const auto* p = known.find(pid)) {
      out.push_back(*p);
    } else {
      added.erase(pid.value);  // a later thread of it may name it
    }
  };
  add(incident.process.pid, incident.process);
  for (const auto& [identity, tid] : cycle) add(identity.pid, identity);
  for (const auto& t : spurs) add(t.pid, std::nullopt);
  return out;
}

}  // namespace wctmon::incident_building
