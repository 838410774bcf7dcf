#include "core/incident_effects.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>

namespace wctmon {

std::vector<ThreadRef> evidenceThreads(const Incident& incident) {
  if (incident.kind == IncidentKind::kDeadlock) return incident.threads;
  std::vector<ThreadRef> out = incident.threads;
  for (const auto& chain : incident.chains) {
    for (const auto& node : chain.nodes) {
      if (node.isThread() && node.thread.tid.value != 0 &&
          std::find(out.begin(), out.end(), node.thread) == out.end()) {
        out.push_back(node.thread);
      }
    }
  }
  return out;
}

IncidentEffects::IncidentEffects(Dependencies deps, const Config::Alerts& limits)
    : deps_(std::move(deps)),
      alerts_(deps_.clock, limits),
      recorder_({deps_.store, deps_.alerts, deps_.clock, deps_.runtime_targets}) {}

void IncidentEffects::push(std::vector<IncidentChange> changes) {
  if (changes.empty()) return;
  for (const auto& change : changes) disturbing(stoppedBy(change), +1);
  {
    MutexLock lock(mutex_);
    pending_ += changes.size();
    queue_.push_back(std::move(changes));
  }
  run();
}

void IncidentEffects::checkStore() {
  if (!recorder_.hasStore()) return;
  {
    MutexLock lock(mutex_);
    queue_.emplace_back();  // an empty batch: the check
  }
  run();
}

std::vector<Incident> IncidentEffects::reopenStored() {
  auto open = recorder_.storedOpenIncidents();
  if (!open.empty()) spdlog::info("{} incident(s) were open when the service stopped", open.size());
  recorder_.feed().seed(open);
  for (const auto& opening : alerts_.adopt(open)) (void)deps_.alerts->resume(opening);
  return open;
}

IncidentEffects::Counters IncidentEffects::counters() const {
  const auto& recorded = recorder_.counters();
  return Counters{.captures = captures_,
                  .dumps = dumps_,
                  .dumps_failed = dumps_failed_,
                  .pending = pending_,
                  .store_errors = recorded.store_errors,
                  .pending_writes = recorded.pending_writes,
                  .store_writes_dropped = recorded.store_writes_dropped,
                  .alerts_suppressed = alerts_.suppressed()};
}

void IncidentEffects::run() {
  {
    MutexLock lock(mutex_);
    if (running_ || (queue_.empty() && taken_.empty())) return;
    running_ = true;
  }
  if (deps_.executor) {
    deps_.executor([this] { drain(); });
  } else {
    drain();
  }
}

void IncidentEffects::drain() {
  for (;;) {
    std::vector<IncidentChange> batch;
    std::optional<Taking> evidence;
    {
      MutexLock lock(mutex_);
      if (!taken_.empty()) {
        // Evidence that came back goes first: the changes of its incident wait for it.
        evidence.emplace(std::move(taken_.front()));
        taken_.pop_front();
      } else if (queue_.empty()) {
        running_ = false;
        return;
      } else {
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (evidence) {
      evidenceTaken(std::move(*evidence));
      continue;
    }
    if (batch.empty()) recorder_.checkStore();
    for (auto& change : batch) apply(change);
  }
}

bool IncidentEffects::takesEvidence(const IncidentChange& change) const {
  return change.capture || (change.dump && deps_.dumps != nullptr);
}

std::set<Pid> IncidentEffects::stoppedBy(const IncidentChange& change) const {
  std::set<Pid> out;
  if (change.capture) {
    for (const auto& t : evidenceThreads(change.incident)) out.insert(t.pid);
  }
  if (takesEvidence(change)) out.insert(change.incident.process.pid);
  return out;
}

void IncidentEffects::disturbing(const std::set<Pid>& pids, int delta) {
  if (pids.empty()) return;
  const auto now = deps_.clock.steadyNow();
  MutexLock lock(mutex_);
  for (const auto pid : pids) {
    auto& d = disturbed_[pid];
    d.in_flight += delta;
    if (delta < 0) d.ended = now;
  }
  // Long over: no sample still running began before it ended.
  std::erase_if(disturbed_, [&](const auto& entry) {
    return entry.second.in_flight == 0 && now - entry.second.ended > std::chrono::minutes(10);
  });
}

std::set<Pid> IncidentEffects::disturbedSince(Clock::SteadyTimePoint since) const {
  std::set<Pid> out;
  MutexLock lock(mutex_);
  for (const auto& [pid, d] : disturbed_) {
    if (d.in_flight > 0 || d.ended > since) out.insert(pid);
  }
  return out;
}

std::set<std::int64_t> IncidentEffects::openIds() const {
  std::set<std::int64_t> out;
  for (const auto& i : *recorder_.feed().openIncidents()) out.insert(i.id);
  return out;
}

void IncidentEffects::applyRetention(const Config::Retention& retention) const {
  recorder_.applyRetention(retention);
  if (deps_.dumps == nullptr) return;
  const auto removed = deps_.dumps->applyRetention(
      [this](std::int64_t id) { return recorder_.keeps(id); }, retention.max_age);
  if (removed > 0) spdlog::info("retention removed {} dump(s)", removed);
}

Result<DumpRecord> IncidentEffects::dumpNow(Pid pid, std::string diagnosis) const {
  if (deps_.dumps == nullptr) {
    return makeError(ErrorCode::kUnsupported, "this platform takes no dumps");
  }
  return deps_.dumps->dumpProcess(pid, std::move(diagnosis), openIds());
}

void IncidentEffects::apply(IncidentChange& change) {
  const auto id = change.incident.id;
  if (auto held = held_.find(id); held != held_.end()) {
    // Its evidence is still being taken: what happened to it since comes after.
    held->second.push_back(std::move(change));
    return;
  }
  const bool taking = takesEvidence(change);
  Taking job{.type = change.type,
             .stopped = stoppedBy(change),
             .capture = change.capture,
             .dump = change.dump && deps_.dumps != nullptr,
             .runtime_stacks = std::move(change.runtime_stacks),
             .incident = recorder_.record(std::move(change.incident), change.type)};
  if (!taking) {
    alert(job.type, std::move(job.incident), /*captured=*/false);
    --pending_;
    return;
  }
  // Recorded and told first, the evidence and the dump after: a capture stops the threads one by
  // one and unwinds their stacks (up to kCaptureTimeBudget), a dump reads all of the process's
  // memory (seconds). Neither holds up the incident, nor the changes of any other incident: they
  // are taken beside the recording (the evidence lane), and the changes of this incident that
  // come meanwhile wait for its evidence.
  held_[id];
  if (!deps_.executor) {
    take(job);
    evidenceTaken(std::move(job));
    return;
  }
  {
    MutexLock lock(mutex_);
    lane_.push_back(std::move(job));
    if (lane_running_) return;
    lane_running_ = true;
  }
  deps_.executor([this] { drainLane(); });
}

void IncidentEffects::drainLane() {
  for (;;) {
    std::optional<Taking> job;
    {
      MutexLock lock(mutex_);
      if (lane_.empty()) {
        lane_running_ = false;
        return;
      }
      job.emplace(std::move(lane_.front()));
      lane_.pop_front();
    }
    take(*job);
    {
      MutexLock lock(mutex_);
      taken_.push_back(std::move(*job));
    }
    run();
  }
}

void IncidentEffects::take(Taking& job) {
  if (job.capture) {
    const auto threads = evidenceThreads(job.incident);
    job.incident.evidence = captureBounded(*deps_.inspector, threads, deps_.clock);
    attachRuntimeStacks(job.incident.evidence, job.runtime_stacks);
    ++captures_;
  }
  if (job.dump) {
    job.incident.dump = deps_.dumps->dumpIncident(job.incident, openIds());
    ++(job.incident.dump->path.empty() ? dumps_failed_ : dumps_);
  }
  disturbing(job.stopped, -1);
}

void IncidentEffects::evidenceTaken(Taking job) {
  const auto id = job.incident.id;
  auto incident = recorder_.record(std::move(job.incident), IncidentEvent::Type::kUpdated);
  alert(job.type, std::move(incident), job.capture);
  --pending_;
  auto held = held_.extract(id);
  for (auto& later : held.mapped()) apply(later);
}

void IncidentEffects::alert(IncidentEvent::Type type, Incident incident, bool captured) {
  if (deps_.alerts == nullptr) return;
  // The alert carries the whole incident, its evidence included.
  const auto whole = std::make_shared<const Incident>(std::move(incident));
  if (auto sent = alerts_.forEvent(type, whole)) (void)deps_.alerts->send(*sent);
  if (captured) {
    if (auto failed = alerts_.forFailedCapture(whole)) (void)deps_.alerts->send(*failed);
  }
}

}  // namespace wctmon
