#include "core/monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/busy_verdict.h"
#include "model/format.h"

namespace wctmon {
namespace {

/// How a periodic sample of a process of `target` is analysed.
AnalyzeOptions sampleOptions(const std::shared_ptr<const TargetConfig>& target) {
  // A cycle closed by a timed wait is a deadlock only when the wait outlives the target's hang
  // threshold: a back-off that gives way sooner would open, resolve and reopen it.
  AnalyzeOptions options{.max_nodes = kDefaultMaxNodes,
                         .out_of_proc = target->out_of_proc,
                         .wct = target->wct,
                         .all_processes = false,
                         .timed_wait_bound = target->hang_threshold,
                         .capture = false,
                         .confirm_attempts = AnalyzeOptions{}.confirm_attempts,
                         .chain_filter = {},
                         .on_demand = false,
                         .threads_alone = true};
  // Chains matter only where an incident can open: threads waiting on something other than an
  // idle wait (cycles always get theirs). Idle workers cost no chain every interval.
  options.chain_filter = [target](const ThreadSample& t) {
    const auto& ignored = target->ignore_waits;
    return t.status == ObjectStatus::kBlocked && t.wait &&
           std::find(ignored.begin(), ignored.end(), t.wait->type) == ignored.end();
  };
  return options;
}

/// What `wctctl ps` says of a process with an open incident of `kind`.
const char* stateWord(IncidentKind kind) {
  switch (kind) {
    case IncidentKind::kDeadlock:
      return "deadlocked";
    case IncidentKind::kStall:
      return "stalled";
    case IncidentKind::kUnresponsive:
      return "unresponsive";
    case IncidentKind::kBusy:
      return "spinning";
    case IncidentKind::kHang:
    case IncidentKind::kServiceHung:
    case IncidentKind::kWindowHung:
      return "hung";
  }
  return "hung";
}

}  // namespace

Monitor::Monitor(Dependencies deps, Config config)
    : deps_(deps),
      analyzer_(nullptr),  // samples never capture with the analysis: their evidence is an effect
      config_(std::move(config)),
      ids_(deps.effects.lastRecordedId()),
      tracker_(deps.clock, ids_) {}

Monitor::~Monitor() = default;

Monitor::Discovery Monitor::discover() {
  const auto matcher = deps_.targets.matcher();
  // The slow part, outside the lock: samples go on while the process list is read.
  const auto processes = deps_.catalog.list(matcher->needsCmdline());

  MutexLock lock(mutex_);
  Discovery out;
  std::set<ProcessIdentity> alive;
  std::set<ProcessIdentity> matching;
  for (const auto& p : processes) {
    alive.insert(p.identity);
    const TargetConfig* target = matches_.match(matcher, p);
    if (target == nullptr) continue;
    matching.insert(p.identity);
    auto it = watched_.find(p.identity);
    if (it == watched_.end()) {
      // Cheap: opening reads nothing (Linux) or makes a WCT session handle (Windows).
      auto session = deps_.source.open(p.identity.pid);
      if (!session) {
        spdlog::warn("cannot watch {} (pid {}): {}", p.comm, p.identity.pid.value,
                     session.error().message);
        continue;
      }
      WatchedProcess w{p, std::make_shared<const TargetConfig>(*target),
                       std::shared_ptr<WaitChainSession>(std::move(session).value()), std::nullopt};
      watched_.emplace(p.identity, w);
      out.added.push_back(std::move(w));
      // Processes come and go by the hundred on a busy host (a shell loop of sleeps): their
      // comings and goings are for debugging; `wctctl ps` shows what is watched now.
      spdlog::debug("watching {} (pid {}) for target \"{}\"", p.comm, p.identity.pid.value,
                    target->name);
      continue;
    }
    if (!(*it->second.target == *target)) {
      it->second.target = std::make_shared<const TargetConfig>(*target);  // reconfigured
    }
    if (it->second.process.comm != p.comm || it->second.process.exe_name != p.exe_name) {
      // exec: the same process (pid and start time) runs another program. Its samples and
      // incidents go by the new name from now on.
      spdlog::debug("pid {} is now {} (was {})", p.identity.pid.value, p.comm,
                    it->second.process.comm);
    }
    it->second.process = p;
  }
  matches_.keepOnly(alive);
  for (auto it = watched_.begin(); it != watched_.end();) {
    if (matching.contains(it->first)) {
      ++it;
      continue;
    }
    const bool exited = !alive.contains(it->first);
    spdlog::debug("no longer watching pid {}: {}", it->first.pid.value,
                  exited ? "it exited" : "no target selects it");
    handle(exited ? tracker_.exited(it->first)
                  : tracker_.forget(it->first, "the process is no longer watched"));
    out.removed.push_back(it->first);
    last_capture_.erase(it->first);
    forgetThreads(it->second);
    it = watched_.erase(it);
  }
  // Processes of open incidents that no target watches (adopted from the store, or the other
  // processes of a deadlock): gone means their incidents are over.
  for (const auto& id : tracker_.trackedProcesses()) {
    if (!alive.contains(id) && !watched_.contains(id)) handle(tracker_.exited(id));
  }
  std::set<std::int32_t> watched_pids;
  for (const auto& [id, w] : watched_) watched_pids.insert(id.pid.value);
  std::erase_if(progressing_, [&watched_pids](const auto& entry) {
    return !watched_pids.contains(entry.first.pid.value);
  });
  publishWatched();
  lock.unlock();
  deps_.effects.checkStore();  // at each discovery
  return out;
}

void Monitor::asyncSample(const ProcessIdentity& process, Executor executor, SampleDone done) {
  std::shared_ptr<const TargetConfig> target;
  std::shared_ptr<WaitChainSession> session;
  bool left_out = false;
  {
    MutexLock lock(mutex_);
    auto it = watched_.find(process);
    if (it != watched_.end()) {
      target = it->second.target;
      session = it->second.session;
      left_out = target->out_of_proc && tracker_.leadsElsewhere(process);
    }
  }
  if (session == nullptr) {
    executor([done = std::move(done)] { done(false); });
    return;
  }
  const auto started = deps_.clock.steadyNow();
  auto options = sampleOptions(target);
  if (left_out) options.out_of_proc = false;
  analyzer_.asyncAnalyze(
      std::move(session), options, executor,
      [this, process, target, started, left_out, executor,
       done = std::move(done)](Result<Analysis> a) {
        done(takeSample(process, target, std::move(a), started, left_out, executor));
      });
}

void Monitor::cancelSample(const ProcessIdentity& process) {
  std::shared_ptr<WaitChainSession> session;
  {
    MutexLock lock(mutex_);
    auto it = watched_.find(process);
    if (it == watched_.end()) return;
    session = it->second.session;
  }
  session->cancel();
}

std::vector<IncidentProcess> Monitor::peersOf(const ProcessIdentity& process,
                                              const Analysis& analysis) {
  std::vector<IncidentProcess> peers;
  std::unordered_map<std::int32_t, const ProcessSeen*> seen;
  for (const auto& s : analysis.result.other_processes) seen.emplace(s.pid.value, &s);
  std::unordered_set<std::int32_t> named{process.pid.value};
  for (const auto& d : analysis.result.deadlocks) {
    for (const auto* list : {&d.threads, &d.spurs}) {
      for (const auto& t : *list) {
        if (!named.insert(t.pid.value).second) continue;
        const auto found = seen.find(t.pid.value);
        const ProcessSeen* p = found != seen.end() ? found->second : nullptr;
        if (p != nullptr && p->start_time != 0) {
          peers.push_back(IncidentProcess{{p->pid, p->start_time}, p->name, p->title});
        } else if (auto info = deps_.catalog.get(t.pid, false)) {
          // A platform whose sample does not identify the other processes (WCT names only
          // their threads): the catalog does, read outside the lock like the analysis.
          peers.push_back(
              IncidentProcess{info->identity, info->comm, p != nullptr ? p->title : std::string()});
        }
      }
    }
  }
  std::sort(peers.begin(), peers.end(), [](const IncidentProcess& a, const IncidentProcess& b) {
    return a.identity.pid < b.identity.pid;
  });
  return peers;
}

bool Monitor::takeSample(const ProcessIdentity& process, std::shared_ptr<const TargetConfig> target,
                         Result<Analysis> analysis, Clock::SteadyTimePoint started,
                         bool others_left_out, const Executor& executor) {
  // The other processes of its deadlocks, as the sample read them.
  auto peers = analysis ? peersOf(process, *analysis) : std::vector<IncidentProcess>{};

  MutexLock lock(mutex_);
  // Dropped while this sample ran (it exited, or a reload unselected it): its incidents were
  // resolved then, and this late sample must not open them again.
  auto watched = watched_.find(process);
  if (watched == watched_.end()) return false;
  const auto last = [&](std::string state, std::uint32_t threads) {
    auto& was = watched->second.last_sample;
    if (threads == 0 && was) threads = was->threads;  // unknown this time: as last time
    counters_.watched_threads += std::uint64_t{threads} - (was ? was->threads : 0);
    was = WatchedProcess::LastSample{deps_.clock.now(), threads, std::move(state)};
  };
  if (!analysis && analysis.error().code == ErrorCode::kCancelled) {
    ++counters_.samples_cancelled;
    last("overdue", 0);
    return true;
  }
  if (!analysis && analysis.error().code == ErrorCode::kBusy) {
    ++counters_.samples_refused;
    last("busy", 0);
    return true;
  }
  ++counters_.samples;
  const bool replaced = analysis && analysis->result.process_start_time != process.start_time;
  if ((!analysis && analysis.error().code == ErrorCode::kNoSuchProcess) || replaced) {
    handle(tracker_.exited(process));
    forgetThreads(watched->second);
    watched_.erase(watched);
    last_capture_.erase(process);
    publishWatched();
    return false;
  }
  if (!analysis) {
    ++counters_.sample_errors;
    spdlog::warn("sampling pid {} failed: {}", process.pid.value, analysis.error().message);
    last("error: " + analysis.error().message, 0);
    return true;
  }
  auto& result = analysis->result;
  ProcessObservation o;
  o.process = process;
  // The catalog's name: it notices an exec at the next discovery, where a sample may carry the
  // name its process had when the session's cache was filled.
  o.process_name =
      watched->second.process.comm.empty() ? result.process_name : watched->second.process.comm;
  o.process_title = result.process_title;
  o.target = std::move(target);
  const auto threads = static_cast<std::uint32_t>(
      std::count_if(analysis->threads.begin(), analysis->threads.end(),
                    [&](const ThreadSample& t) { return t.id.pid == process.pid; }));
  o.threads = std::move(analysis->threads);
  o.deadlocks = std::move(result.deadlocks);
  o.chains = std::move(result.chains);
  o.peers = std::move(peers);
  o.disturbed = deps_.effects.disturbedSince(started);
  o.others_left_out = others_left_out;
  handle(tracker_.observe(o), o.threads);
  handle(tracker_.settleBusy(o));
  std::vector<std::pair<ThreadRef, std::string>> to_profile;
  if (deps_.hot_spots != nullptr) {
    const auto now = deps_.clock.steadyNow();
    for (const auto& t : tracker_.busyThreads(o)) {
      const auto judged = progressing_.find(t);
      if (profiling_.contains(t) ||
          (judged != progressing_.end() && now - judged->second < o.target->busy.threshold)) {
        continue;
      }
      profiling_.insert(t);
      const auto sample = std::find_if(o.threads.begin(), o.threads.end(),
                                       [&](const ThreadSample& s) { return s.id == t; });
      to_profile.emplace_back(t, sample != o.threads.end() ? sample->name : std::string());
    }
  }
  auto stall = tracker_.stallOf(o);
  if (!stall) {
    handle(tracker_.clear(IncidentKind::kStall, stallKey(process.pid),
                          "a thread of the process ran again", process));
  }
  const auto open = tracker_.openKindOf(process);
  last(open ? std::string(stateWord(*open)) : "ok", threads);
  lock.unlock();
  if (stall) raiseSymptom(std::move(*stall), executor);
  for (auto& [thread, name] : to_profile) {
    deps_.hot_spots->asyncProfile(thread, kBusyWindow,
                                  [this, process, thread = thread, name = std::move(name),
                                   target = o.target, executor](Result<ThreadProfile> profile) {
                                    takeProfile(process, thread, name, target, std::move(profile),
                                                executor);
                                  });
  }
  return true;
}

void Monitor::takeProfile(const ProcessIdentity& process, ThreadRef thread, std::string thread_name,
                          std::shared_ptr<const TargetConfig> target, Result<ThreadProfile> profile,
                          const Executor& executor) {
  Symptom symptom;
  {
    MutexLock lock(mutex_);
    profiling_.erase(thread);
    const auto watched = watched_.find(process);
    if (watched == watched_.end()) return;
    const auto now = deps_.clock.steadyNow();
    if (!profile) {
      spdlog::info("thread {} of pid {} uses a whole core, but its frames cannot be sampled: {}",
                   thread.tid.value, process.pid.value, profile.error().message);
      progressing_[thread] = now;
      return;
    }
    const auto verdict = judgeBusy(*profile);
    if (!verdict.spinning) {
      spdlog::info("thread {} of pid {} uses a whole core, and {} ({})", thread.tid.value,
                   process.pid.value, verdict.why_not, hotFunctionsText(verdict.hot));
      progressing_[thread] = now;
      return;
    }
    const auto busy_for = tracker_.busyFor(process, thread.tid);
    symptom.kind = IncidentKind::kBusy;
    symptom.pid = process.pid;
    symptom.target = target->name;
    symptom.key = busyKey(thread.tid);
    symptom.threads = {thread.tid};
    symptom.summary =
        "thread " + std::to_string(thread.tid.value) +
        (thread_name.empty() ? "" : " (" + thread_name + ")") + " of " +
        watched->second.process.comm + " (pid " + std::to_string(process.pid.value) +
        ") has used (or waited in a run queue to use) " + std::to_string(target->busy.cpu_percent) +
        "% or more of a core for " + durationText(busy_for.value_or(target->busy.threshold)) +
        " within the same " + countOf(std::min<std::size_t>(verdict.hot.size(), 3), "function") +
        ": " + hotFunctionsText(verdict.hot) + " of " + std::to_string(verdict.samples) +
        " samples";
  }
  raiseSymptom(std::move(symptom), executor);
}

void Monitor::raiseSymptom(Symptom symptom, Executor executor) {
  const auto key = symptomSignature(symptom.kind, symptom.key);
  std::shared_ptr<const TargetConfig> target;
  Config::Detection detection;
  {
    MutexLock lock(mutex_);
    if (tracker_.isOpen(symptom.kind, symptom.key) || !raising_.insert(key).second) return;
    for (const auto& [identity, w] : watched_) {
      if (identity.pid == symptom.pid) target = w.target;
    }
    detection = config_.detection;
  }
  const auto unraise = [this, &key] {
    MutexLock lock(mutex_);
    raising_.erase(key);
  };
  auto process = deps_.catalog.get(symptom.pid, false);
  if (!process) {
    spdlog::warn("{}: pid {} is not there to be analysed", symptom.summary, symptom.pid.value);
    unraise();
    return;
  }
  if (target == nullptr) {
    // A process no target watches (a service's): analysed as the defaults say.
    TargetConfig unwatched;
    unwatched.name = symptom.target;
    unwatched.hang_threshold = detection.hang_threshold;
    unwatched.ignore_waits = detection.ignore_waits;
    target = std::make_shared<const TargetConfig>(std::move(unwatched));
  }
  // A session of its own: the watched process's session serves one sample at a time, and this
  // analysis reads every thread, where periodic samples follow only the threads that can hang.
  auto session = deps_.source.open(symptom.pid);
  if (!session) {
    takeSymptom(symptom, *process, target, session.error());
    return;
  }
  auto options = sampleOptions(target);
  options.chain_filter = {};
  // The incident is for its chains: without them it says why, rather than show threads whose
  // waits could not be read as if they waited on nothing.
  options.threads_alone = false;
  analyzer_.asyncAnalyze(
      std::shared_ptr<WaitChainSession>(std::move(session).value()), std::move(options),
      std::move(executor),
      [this, symptom = std::move(symptom), process = *process, target](Result<Analysis> a) {
        takeSymptom(symptom, process, target, std::move(a));
      });
}

void Monitor::takeSymptom(const Symptom& symptom, const ProcessInfo& process,
                          std::shared_ptr<const TargetConfig> target, Result<Analysis> analysis) {
  auto peers = analysis ? peersOf(process.identity, *analysis) : std::vector<IncidentProcess>{};
  MutexLock lock(mutex_);
  raising_.erase(symptomSignature(symptom.kind, symptom.key));
  if (!analysis && analysis.error().code == ErrorCode::kNoSuchProcess) {
    spdlog::info("{}: the process exited before it could be analysed", symptom.summary);
    return;
  }
  if (analysis && analysis->result.process_start_time != 0 &&
      analysis->result.process_start_time != process.identity.start_time) {
    return;  // another process under the pid by now
  }
  ProcessObservation o;
  o.process = process.identity;
  o.process_name = process.comm;
  o.target = std::move(target);
  Symptom raised = symptom;
  if (analysis) {
    o.process_title = analysis->result.process_title;
    o.threads = std::move(analysis->threads);
    o.deadlocks = std::move(analysis->result.deadlocks);
    o.chains = std::move(analysis->result.chains);
    o.peers = std::move(peers);
  } else {
    // The incident opens all the same: the symptom is real whether or not its chains can be
    // read, and it says why they are missing.
    raised.summary += " (its wait chains could not be read: " + analysis.error().message + ")";
  }
  handle(tracker_.raise(o, raised), o.threads);
}

void Monitor::clearSymptom(IncidentKind kind, const std::string& key,
                           const std::string& resolution) {
  MutexLock lock(mutex_);
  handle(tracker_.clear(kind, key, resolution));
}

bool Monitor::symptomHeld(IncidentKind kind, const std::string& key) const {
  MutexLock lock(mutex_);
  return tracker_.isOpen(kind, key) || raising_.contains(std::string(toString(kind)) + " " + key);
}

void Monitor::handle(std::vector<IncidentEvent> events, std::span<const ThreadSample> threads) {
  std::vector<IncidentChange> batch;
  // Incidents one sample opens in a process (two deadlocks at once) are all captured: the
  // interval between captures keeps a process from being stopped again and again, not from
  // giving each of its incidents its evidence.
  std::set<ProcessIdentity> capturing;
  // One dump per process, though: it holds the whole process, whatever incident it was for.
  std::set<ProcessIdentity> dumping;
  for (auto& event : events) {
    auto& incident = event.incident;
    IncidentChange effect;
    effect.type = event.type;
    if (event.type == IncidentEvent::Type::kOpened) {
      ++counters_.incidents_opened;
      ++counters_.opened_by_kind[static_cast<std::size_t>(incident.kind)];
      // A hang gets its evidence as a deadlock does: the hung thread and the threads its chain
      // leads to.
      const bool capture = capturing.contains(incident.process) || shouldCapture(incident);
      if (capture) capturing.insert(incident.process);
      effect.capture = capture && deps_.effects.captures();
      if (effect.capture) {
        effect.runtime_stacks = runtimeStacksOf(evidenceThreads(incident), threads);
      }
      effect.dump = capture && wantsDump(incident.kind) && dumping.insert(incident.process).second;
      spdlog::warn("{} incident opened: {}", toString(incident.kind), incident.summary);
    } else if (event.type == IncidentEvent::Type::kResolved) {
      ++counters_.incidents_resolved;
      spdlog::info("{} incident resolved ({}): {}", toString(incident.kind), incident.resolution,
                   incident.summary);
    }
    effect.incident = std::move(incident);
    batch.push_back(std::move(effect));
  }
  // Under the lock, so that the effects take the changes in the order they were decided.
  deps_.effects.push(std::move(batch));
}

bool Monitor::wantsDump(IncidentKind kind) const {
  if (!deps_.effects.dumps()) return false;
  switch (config_.capture.dump) {
    case DumpPolicy::kNone:
      return false;
    case DumpPolicy::kDeadlock:
      return kind == IncidentKind::kDeadlock;
    case DumpPolicy::kIncident:
      return true;
  }
  return false;
}

bool Monitor::shouldCapture(const Incident& incident) {
  if (!(deps_.effects.captures() || deps_.effects.dumps()) || !config_.capture.enabled) {
    return false;
  }
  auto w = watched_.find(incident.process);
  if (w != watched_.end() && !w->second.target->capture) return false;
  const auto now = deps_.clock.steadyNow();
  auto last = last_capture_.find(incident.process);
  if (last != last_capture_.end() && now - last->second < config_.capture.min_interval) {
    spdlog::info("evidence of pid {} was captured {} ms ago; not again", incident.process.pid.value,
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - last->second).count());
    return false;
  }
  last_capture_[incident.process] = now;
  return true;
}

void Monitor::reconfigure(Config config) {
  MutexLock lock(mutex_);
  config_ = std::move(config);
}

std::vector<WatchedProcess> Monitor::watched() const {
  MutexLock lock(mutex_);
  std::vector<WatchedProcess> out;
  for (const auto& [id, w] : watched_) out.push_back(w);
  return out;
}

std::optional<WatchedProcess> Monitor::watchedProcess(const ProcessIdentity& process) const {
  MutexLock lock(mutex_);
  auto it = watched_.find(process);
  if (it == watched_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::chrono::milliseconds> Monitor::intervalOf(const ProcessIdentity& process) const {
  MutexLock lock(mutex_);
  auto it = watched_.find(process);
  if (it == watched_.end()) return std::nullopt;
  return it->second.target->interval;
}

void Monitor::forgetThreads(const WatchedProcess& process) {
  if (process.last_sample) counters_.watched_threads -= process.last_sample->threads;
}

void Monitor::publishWatched() {
  counters_.watched = watched_.size();
  std::map<std::string, std::size_t> by_target;
  for (const auto& [id, w] : watched_) ++by_target[w.target->name];
  MutexLock lock(published_mutex_);
  watched_by_target_ = std::move(by_target);
}

std::map<std::string, std::size_t> Monitor::watchedByTarget() const {
  std::map<std::string, std::size_t> out;
  for (const auto& target : deps_.targets.matcher()->targets()) out[target.name] = 0;
  MutexLock lock(published_mutex_);
  for (const auto& [name, count] : watched_by_target_) out[name] = count;
  return out;
}

MonitorStats Monitor::stats() const {
  MonitorStats s;
  s.samples = counters_.samples;
  s.sample_errors = counters_.sample_errors;
  s.samples_cancelled = counters_.samples_cancelled;
  s.samples_refused = counters_.samples_refused;
  s.incidents_opened = counters_.incidents_opened;
  for (std::size_t k = 0; k < kIncidentKindCount; ++k) {
    s.opened_by_kind[k] = counters_.opened_by_kind[k];
  }
  s.watched_threads = counters_.watched_threads;
  s.incidents_resolved = counters_.incidents_resolved;
  const auto effects = deps_.effects.counters();
  s.captures = effects.captures;
  s.dumps = effects.dumps;
  s.dumps_failed = effects.dumps_failed;
  s.store_errors = effects.store_errors;
  s.pending_writes = effects.pending_writes;
  s.store_writes_dropped = effects.store_writes_dropped;
  s.alerts_suppressed = effects.alerts_suppressed;
  s.watched = counters_.watched;
  s.targets = deps_.targets.matcher()->targets().size();
  s.pending_effects = effects.pending;
  return s;
}

Config Monitor::config() const {
  MutexLock lock(mutex_);
  return config_;
}

void Monitor::adoptStoredIncidents() {
  const auto open = deps_.effects.reopenStored();
  if (open.empty()) return;
  MutexLock lock(mutex_);
  handle(tracker_.adopt(open));
}

}  // namespace wctmon
