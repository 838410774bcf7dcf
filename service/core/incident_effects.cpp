#include "core/incident_effects.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <span>
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
    if (running_ || queue_.empty()) return;
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
    {
      MutexLock lock(mutex_);
      if (queue_.empty()) {
        running_ = false;
        return;
      }
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    if (batch.empty()) recorder_.checkStore();
    for (auto& change : batch) {
      apply(change);
      --pending_;
    }
  }
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
  auto incident = recorder_.record(std::move(change.incident), change.type);
  // Recorded and told first, the evidence and the dump after: a capture stops the threads one by
  // one and unwinds their stacks (a few hundred milliseconds), a dump reads all of the process's
  // memory (seconds), and the incident must not wait for either.
  if (change.capture) {
    const auto threads = evidenceThreads(incident);
    const auto taken = std::min(threads.size(), kMaxCapturedThreads);
    incident.evidence = deps_.inspector->capture(std::span<const ThreadRef>(threads.data(), taken));
    for (std::size_t i = taken; i < threads.size(); ++i) {
      ThreadCapture named;
      named.thread = threads[i];
      named.error = "not captured: the evidence of an incident is taken from its first " +
                    std::to_string(kMaxCapturedThreads) + " threads";
      incident.evidence.push_back(std::move(named));
    }
    attachRuntimeStacks(incident.evidence, change.runtime_stacks);
    ++captures_;
  }
  if (change.dump && deps_.dumps != nullptr) {
    incident.dump = deps_.dumps->dumpIncident(incident, openIds());
    ++(incident.dump->path.empty() ? dumps_failed_ : dumps_);
  }
  if (change.capture || change.dump) {
    incident = recorder_.record(std::move(incident), IncidentEvent::Type::kUpdated);
  }
  if (deps_.alerts == nullptr) return;
  // The alert carries the whole incident, its evidence included.
  const auto whole = std::make_shared<const Incident>(std::move(incident));
  if (auto alert = alerts_.forEvent(change.type, whole)) (void)deps_.alerts->send(*alert);
  if (change.capture) {
    if (auto failed = alerts_.forFailedCapture(whole)) (void)deps_.alerts->send(*failed);
  }
}

}  // namespace wctmon
