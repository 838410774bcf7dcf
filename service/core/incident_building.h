#pragma once

// How the incident tracker puts incidents together from an observation: their signatures, the
// names of their threads and processes, their chains and the threads behind them, and the keys
// of deadlock cycles.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/incident_tracker.h"

namespace wctmon::incident_building {

/// The time of an incident's change: the wall clock's, but never before the incident's last
/// change. After the wall clock is set back, an incident opened before still reads as opened,
/// then updated, then resolved, in that order.
[[nodiscard]] Incident::TimePoint laterOf(Incident::TimePoint now, Incident::TimePoint last);

/// The signature of a deadlock: "deadlock" and its cycle threads.
[[nodiscard]] std::string deadlockSignature(const std::vector<ThreadRef>& threads);

/// The signature of a hang: its thread and what it waits on.
[[nodiscard]] std::string hangSignature(Tid tid, const WaitObject& wait);

/// The chains of `threads`, their thread nodes under the names the observation knows for their
/// processes: a sample may still carry the name a process had before it ran another program.
[[nodiscard]] std::vector<WaitChain> chainsOf(const ProcessObservation& o,
                                              const std::vector<ThreadRef>& threads);

/// The sample of thread `tid` among `threads`; null when it has none.
[[nodiscard]] const ThreadSample* findSample(const std::vector<ThreadSample>& threads, Tid tid);

/// A thread with its name: from the process's own sample, or, for a thread of another process,
/// from the chains that reached it.
[[nodiscard]] std::string nameOf(const ProcessObservation& o, ThreadRef t);

/// Held by a signal or a tracer: it shows a kernel wait, and resumes the call it was in.
[[nodiscard]] bool isStopped(const ThreadSample& t);

/// Notes what the process's own threads of a cycle wait on, as its sample shows the cycle.
void recordWaits(std::map<ThreadRef, std::pair<ObjectType, std::uint64_t>>& waits,
                 const ProcessObservation& o, const std::vector<ThreadRef>& threads);

/// Whether the observation's target ignores waits of `type`.
[[nodiscard]] bool isIgnored(const ProcessObservation& o, ObjectType type);

/// Threads that wait, directly or through others, on `roots`, within one process's chains.
[[nodiscard]] std::vector<ThreadRef> spursOf(const std::vector<WaitChain>& chains,
                                             const std::vector<ThreadRef>& roots);

/// The process `pid` in `processes`; null when it is not there.
[[nodiscard]] const IncidentProcess* findProcess(const std::vector<IncidentProcess>& processes,
                                                 Pid pid);

/// The peer `pid` of the observation; null when it is not one.
[[nodiscard]] const IncidentProcess* peerOf(const ProcessObservation& o, Pid pid);

/// The process `pid` as the observation knows it: itself, or one of its peers.
[[nodiscard]] std::optional<IncidentProcess> processOf(const ProcessObservation& o, Pid pid);

/// findProcess for many lookups in one list (a cycle through a thousand processes).
class ProcessIndex {
 public:
  /// `processes` must outlive the index, unchanged.
  explicit ProcessIndex(const std::vector<IncidentProcess>& processes);
  /// The process `pid`; null when it is not there.
  [[nodiscard]] const IncidentProcess* find(Pid pid) const;

 private:
  std::unordered_map<std::int32_t, const IncidentProcess*> by_pid_;
};

/// "server (pid 10)"
[[nodiscard]] std::string processLabel(const IncidentProcess& p);

/// "a (pid 1)", "a (pid 1) and b (pid 2)", "a (pid 1), b (pid 2) and c (pid 3)".
[[nodiscard]] std::string processesText(const std::vector<IncidentProcess>& processes);

/// Replaces the label of a renamed process in a summary written under its old name.
void renameIn(std::string& text, const IncidentProcess& before, const std::string& name);

/// Takes `processes` as the incident's list, renaming it in the summary where names changed.
/// Returns whether anything changed.
bool setProcesses(Incident& incident, std::vector<IncidentProcess> processes);

/// An incident of `kind` in the observed process, opened and updated at `now`.
[[nodiscard]] Incident newIncident(IncidentKind kind, const ProcessObservation& o,
                                   std::string signature, std::vector<ThreadRef> threads,
                                   Clock::TimePoint now);

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

[[nodiscard]] CycleKey cycleOf(const ProcessObservation& o, const std::vector<ThreadRef>& threads);

/// The same threads of the same processes, where a start time of 0 (not known) matches any.
[[nodiscard]] bool sameCycle(const CycleKey& a, const CycleKey& b);

/// Whether `process` has a thread in the cycle.
[[nodiscard]] bool isMember(const CycleKey& cycle, const ProcessIdentity& process);

/// Whether every thread of the cycle belongs to `pid` (any sample of it shows the cycle).
[[nodiscard]] bool isWithin(const CycleKey& cycle, Pid pid);

/// Every process of a deadlock, the first one first, then those of its cycle and of the threads
/// behind it; each under the name the observation (when given) knows, else as listed before.
/// A process known by its pid alone is left out until a sample names it.
[[nodiscard]] std::vector<IncidentProcess> deadlockProcesses(const Incident& incident,
                                                             const CycleKey& cycle,
                                                             const std::vector<ThreadRef>& spurs,
                                                             const ProcessObservation* o);

}  // namespace wctmon::incident_building
