// The incidents of symptoms (a failing probe, a service stuck pending, a window that does not
// answer, a stalled process): opened when their watcher reports them, resolved when it no longer
// does. They live beside the hangs of their process, so that its exit or its leaving the watch
// resolves them with the rest.
#include <algorithm>

#include "core/incident_building.h"
#include "core/incident_tracker.h"
#include "model/format.h"

namespace wctmon {
namespace {

using incident_building::chainsOf;
using incident_building::isMember;
using incident_building::isStopped;
using incident_building::laterOf;
using incident_building::newIncident;

/// Whether a wait of `type` can end by something outside the process (a client, a child, a
/// timer, a signal) or cannot be told: then a process whose threads all wait is idle, not
/// stalled.
bool endsFromOutside(ObjectType type) {
  switch (type) {
    case ObjectType::kCriticalSection:
    case ObjectType::kMutex:
    case ObjectType::kThreadWait:
    case ObjectType::kThread:
    case ObjectType::kFutex:
    case ObjectType::kRwLock:
    case ObjectType::kCondition:
    case ObjectType::kUnownedLock:
    case ObjectType::kFileLock:
      return false;
    default:
      return true;
  }
}

/// How severe an open incident of `kind` is for the process's state: lower is more.
int severity(IncidentKind kind) {
  switch (kind) {
    case IncidentKind::kDeadlock:
      return 0;
    case IncidentKind::kStall:
      return 1;
    case IncidentKind::kUnresponsive:
      return 2;
    case IncidentKind::kServiceHung:
      return 3;
    case IncidentKind::kHang:
      return 4;
    case IncidentKind::kWindowHung:
      return 5;
    case IncidentKind::kBusy:
      return 6;
  }
  return 7;
}

}  // namespace

std::vector<IncidentEvent> IncidentTracker::raise(const ProcessObservation& o,
                                                  const Symptom& symptom) {
  auto signature = symptomSignature(symptom.kind, symptom.key);
  auto& state = processes_[o.process];
  if (state.open.contains(signature) || isOpen(symptom.kind, symptom.key)) return {};
  std::vector<ThreadRef> threads;
  for (const auto tid : symptom.threads) threads.push_back(ThreadRef{o.process.pid, tid});
  if (threads.empty()) {
    for (const auto& t : o.threads) {
      if (t.id.pid == o.process.pid && t.status == ObjectStatus::kBlocked) {
        threads.push_back(t.id);
      }
    }
  }
  Incident incident = newIncident(symptom.kind, o, signature, threads, clock_.now());
  incident.id = ids_.next();
  // Every thread's chain, the running ones too: what the process was doing when it was found
  // hung from outside is the whole picture, not only its cycles.
  incident.chains = o.chains.empty() ? chainsOf(o, incident.threads) : o.chains;
  annotateWaitTimes(o.process, incident.chains);
  std::size_t blocked = 0;
  std::size_t all = 0;
  for (const auto& t : o.threads) {
    if (t.id.pid != o.process.pid || isExited(t)) continue;
    ++all;
    if (t.status == ObjectStatus::kBlocked) ++blocked;
  }
  incident.summary = symptom.summary;
  if (all > 0) {
    incident.summary +=
        "; " + std::to_string(blocked) + " of " + countOf(all, "thread") + " blocked";
  }
  std::vector<IncidentEvent> events{{IncidentEvent::Type::kOpened, incident}};
  state.open.emplace(std::move(signature), std::move(incident));
  return events;
}

std::vector<IncidentEvent> IncidentTracker::clear(IncidentKind kind, std::string_view key,
                                                  std::string_view resolution,
                                                  std::optional<ProcessIdentity> process) {
  const auto signature = symptomSignature(kind, key);
  std::vector<IncidentEvent> events;
  for (auto& [identity, state] : processes_) {
    if (process && identity != *process) continue;
    auto it = state.open.find(signature);
    if (it == state.open.end() || it->second.kind != kind) continue;
    events.push_back(
        {IncidentEvent::Type::kResolved, resolved(it->second, std::string(resolution))});
    state.open.erase(it);
  }
  return events;
}

bool IncidentTracker::isOpen(IncidentKind kind, std::string_view key) const {
  const auto signature = symptomSignature(kind, key);
  return std::any_of(processes_.begin(), processes_.end(), [&](const auto& entry) {
    const auto it = entry.second.open.find(signature);
    return it != entry.second.open.end() && it->second.kind == kind;
  });
}

std::optional<Symptom> IncidentTracker::stallOf(const ProcessObservation& o) const {
  const auto p = processes_.find(o.process);
  if (p == processes_.end()) return std::nullopt;
  // A deadlock explains a process whose threads all wait: it is that incident, not another.
  for (const auto& [cycle, d] : deadlocks_) {
    if (isMember(cycle, o.process) || d.incident.process == o.process) return std::nullopt;
  }
  const auto& history = p->second.history;
  std::size_t threads = 0;
  std::optional<Clock::SteadyTimePoint> latest;
  for (const auto& t : o.threads) {
    if (t.id.pid != o.process.pid || isExited(t)) continue;
    // A thread that runs, is held by a signal or a tracer, or whose run count is not known
    // (nothing tells that it has not run) ends the question; so does a timed wait: time ends
    // it (Go's sysmon sleeps a minute at a time in an idle program).
    if (t.status != ObjectStatus::kBlocked || !t.wait || isStopped(t) || !t.context_switches ||
        t.wait->timeout || endsFromOutside(t.wait->type)) {
      return std::nullopt;
    }
    const auto h = history.find(t.id.tid.value);
    if (h == history.end() || h->second.first) return std::nullopt;
    latest = latest ? std::max(*latest, h->second.since) : h->second.since;
    ++threads;
  }
  if (threads == 0 || clock_.steadyNow() - *latest < o.target->hang_threshold) return std::nullopt;
  // Waits on a thread of another process that runs will end when it gets there.
  for (const auto& chain : o.chains) {
    for (const auto& node : chain.nodes) {
      if (node.isThread() && node.thread.pid != o.process.pid &&
          node.status == ObjectStatus::kRunning) {
        return std::nullopt;
      }
    }
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.steadyNow() - *latest).count();
  Symptom s;
  s.kind = IncidentKind::kStall;
  s.pid = o.process.pid;
  s.target = o.target->name;
  s.key = stallKey(o.process.pid);
  s.summary = withTitle(o.process_name, o.process_title) + " (pid " +
              std::to_string(o.process.pid.value) + ") is stalled: " +
              (threads == 1 ? std::string("its one thread has")
                            : "all " + std::to_string(threads) + " threads have") +
              " been blocked for " + std::to_string(seconds) +
              " s without running, on waits only the process itself can end";
  return s;
}

std::optional<IncidentKind> IncidentTracker::openKindOf(const ProcessIdentity& process) const {
  for (const auto& [cycle, d] : deadlocks_) {
    if (d.incident.process == process) return IncidentKind::kDeadlock;
  }
  // The others live under the process they are in: asked after every sample, this is not a walk
  // over all of them.
  const auto it = processes_.find(process);
  if (it == processes_.end() || it->second.open.empty()) return std::nullopt;
  std::optional<IncidentKind> out;
  for (const auto& [signature, incident] : it->second.open) {
    if (!out || severity(incident.kind) < severity(*out)) out = incident.kind;
  }
  return out;
}

}  // namespace wctmon
