#include "runtime/probe_scheduler.h"

#include <spdlog/spdlog.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <future>

namespace wctmon {

struct ProbeScheduler::Probe {
  Probe(boost::asio::io_context& io, const Clock& clock, std::string target_name,
        ProbeConfig config)
      : target(std::move(target_name)),
        key(target + " " + config.describe()),
        tracker(clock, std::move(config)),
        timer(io) {}
  std::string target;
  /// The symptom's key: the target and what its probe asks.
  std::string key;
  ProbeTracker tracker;  // guarded by the scheduler's mutex
  boost::asio::steady_timer timer;
  bool in_flight = false;
  bool removed = false;
  /// Said once per unresponsive spell: no watched process to open the incident on.
  bool said_no_process = false;
  /// The process the incident would open on, and when a failing probe first found it there: a
  /// process gets `failures` intervals to start answering (a server that was just started, or
  /// restarted, is not hung because it is not listening yet).
  std::optional<ProcessIdentity> process;
  std::chrono::steady_clock::time_point process_seen{};
  /// The probe passed while `process` was the target's: it was up, so its failures count at
  /// once.
  bool process_answered = false;
};

ProbeScheduler::ProbeScheduler(Dependencies deps)
    : deps_(deps), strand_(boost::asio::make_strand(deps.io)), reconcile_timer_(strand_) {}

ProbeScheduler::~ProbeScheduler() = default;

void ProbeScheduler::start() {
  boost::asio::post(strand_, [this] { reconcile(); });
}

bool ProbeScheduler::stop() {
  std::promise<void> stopped;
  boost::asio::post(strand_, [this, &stopped] {
    stopped_ = true;
    reconcile_timer_.cancel();
    std::lock_guard lock(mutex_);
    for (auto& [name, probe] : probes_) probe->timer.cancel();
    stopped.set_value();
  });
  // The pool runs the strand: this waits for a moment at most, unless every worker is stuck.
  if (stopped.get_future().wait_for(std::chrono::seconds(3)) != std::future_status::ready) {
    return false;
  }
  std::unique_lock lock(mutex_);
  return ended_.wait_for(lock, longest_timeout_ + std::chrono::seconds(1),
                         [this] { return in_flight_ == 0; });
}

void ProbeScheduler::reconcile() {
  if (stopped_) return;
  const auto matcher = deps_.targets.matcher();
  std::map<std::string, const TargetConfig*> wanted;
  for (const auto& t : matcher->targets()) {
    if (t.probe) wanted.emplace(t.name, &t);
  }
  std::vector<std::shared_ptr<Probe>> added;
  std::vector<std::shared_ptr<Probe>> gone;
  {
    std::lock_guard lock(mutex_);
    for (auto it = probes_.begin(); it != probes_.end();) {
      const auto w = wanted.find(it->first);
      if (w != wanted.end() && *w->second->probe == it->second->tracker.probe()) {
        ++it;
        continue;
      }
      gone.push_back(it->second);
      it = probes_.erase(it);
    }
    for (const auto& [name, target] : wanted) {
      if (probes_.contains(name)) continue;
      auto probe = std::make_shared<Probe>(deps_.io, deps_.clock, name, *target->probe);
      probes_.emplace(name, probe);
      added.push_back(std::move(probe));
    }
  }
  for (const auto& probe : gone) {
    probe->removed = true;
    probe->timer.cancel();
    deps_.monitor.clearSymptom(IncidentKind::kUnresponsive, probe->key,
                               "the target's probe was changed or removed");
  }
  for (const auto& probe : added) {
    spdlog::info("probing target \"{}\": {} every {} ms", probe->target,
                 probe->tracker.probe().describe(), probe->tracker.probe().interval.count());
    arm(probe, std::chrono::milliseconds(0));
  }
  reconcile_timer_.expires_after(std::chrono::seconds(1));
  reconcile_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) reconcile();
  });
}

void ProbeScheduler::arm(const std::shared_ptr<Probe>& probe, std::chrono::milliseconds delay) {
  probe->timer.expires_after(delay);
  probe->timer.async_wait(
      boost::asio::bind_executor(strand_, [this, probe](const boost::system::error_code& ec) {
        // A cancelled timer that had already expired still delivers success: the flags tell.
        if (ec || stopped_ || probe->removed) return;
        run(probe);
        arm(probe, probe->tracker.probe().interval);
      }));
}

void ProbeScheduler::run(const std::shared_ptr<Probe>& probe) {
  // The previous one is still within its deadline (never longer than the interval): this
  // turn is skipped rather than queued.
  if (probe->in_flight) return;
  probe->in_flight = true;
  {
    std::lock_guard lock(mutex_);
    ++in_flight_;
    longest_timeout_ = std::max(longest_timeout_, probe->tracker.probe().timeout);
  }
  deps_.prober.asyncProbe(probe->tracker.probe(), [this, probe](ProbeOutcome outcome) {
    boost::asio::post(strand_, [this, probe, outcome = std::move(outcome)] {
      probe->in_flight = false;
      if (stopped_ || probe->removed) return;
      take(probe, outcome);
    });
    // Last: once stop() sees none in flight, this scheduler may be gone.
    std::lock_guard lock(mutex_);
    --in_flight_;
    ended_.notify_all();
  });
}

void ProbeScheduler::take(const std::shared_ptr<Probe>& probe, const ProbeOutcome& outcome) {
  ProbeTracker::Change change;
  std::string summary;
  {
    std::lock_guard lock(mutex_);
    change = probe->tracker.record(outcome);
    summary = change == ProbeTracker::Change::kAnswers ? probe->tracker.answersSummary()
                                                       : probe->tracker.unresponsiveSummary();
  }
  if (!outcome.passed) {
    spdlog::debug("probe of \"{}\" failed: {}", probe->target, outcome.detail);
  }
  const auto now = std::chrono::steady_clock::now();
  const auto process = processOf(probe->target);
  if (probe->process != process) {
    probe->process = process;
    probe->process_seen = now;
    probe->process_answered = false;
  }
  if (outcome.passed && process) probe->process_answered = true;
  switch (change) {
    case ProbeTracker::Change::kNone:
      return;
    case ProbeTracker::Change::kAnswers:
      if (probe->said_no_process) spdlog::info("target \"{}\": {}", probe->target, summary);
      probe->said_no_process = false;
      deps_.monitor.clearSymptom(IncidentKind::kUnresponsive, probe->key, summary);
      return;
    case ProbeTracker::Change::kUnresponsive:
    case ProbeTracker::Change::kStillUnresponsive: {
      // Raised again at each failure while unresponsive: a no-op while its incident is open,
      // and the incident opens once there is a process to open it on.
      if (!process) {
        if (!probe->said_no_process) {
          spdlog::warn(
              "target \"{}\" is unresponsive ({}), but none of its processes is "
              "watched: no incident until one is",
              probe->target, summary);
        }
        probe->said_no_process = true;
        return;
      }
      const auto& config = probe->tracker.probe();
      if (!probe->process_answered &&
          now - probe->process_seen < config.interval * config.failures) {
        spdlog::debug("target \"{}\" fails its probe, but pid {} is new to it: it may be starting",
                      probe->target, process->pid.value);
        return;
      }
      Symptom s;
      s.kind = IncidentKind::kUnresponsive;
      s.pid = process->pid;
      s.target = probe->target;
      s.key = probe->key;
      s.summary = "target \"" + probe->target + "\" does not answer: " + summary;
      deps_.monitor.raiseSymptom(std::move(s), deps_.analysis);
      return;
    }
  }
}

std::optional<ProcessIdentity> ProbeScheduler::processOf(const std::string& target) const {
  std::optional<ProcessIdentity> oldest;
  for (const auto& w : deps_.monitor.watched()) {
    if (w.target->name != target) continue;
    if (!oldest || w.process.identity.start_time < oldest->start_time) {
      oldest = w.process.identity;
    }
  }
  return oldest;
}

std::vector<TargetProbeStatus> ProbeScheduler::statuses() const {
  std::lock_guard lock(mutex_);
  std::vector<TargetProbeStatus> out;
  for (const auto& [name, probe] : probes_) {
    out.push_back({name, probe->tracker.probe().describe(), probe->tracker.status()});
  }
  return out;
}

}  // namespace wctmon
