#include "runtime/symptom_watchers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <future>
#include <unordered_set>

#include "model/format.h"

namespace wctmon {
namespace {

bool watches(const PendingServiceRules& rules) { return rules.all || !rules.names.empty(); }

bool sameRules(const PendingServiceRules& a, const PendingServiceRules& b) {
  return a.all == b.all && a.names == b.names && a.no_hint_wait == b.no_hint_wait;
}

std::string describe(const PendingServiceRules& rules) {
  if (rules.all) return "all services";
  std::string out;
  for (const auto& n : rules.names) out += (out.empty() ? "" : ", ") + n;
  return "the services " + out;
}

}  // namespace

SymptomWatchSettings SymptomWatchSettings::from(const Config& config) {
  SymptomWatchSettings s;
  s.services.all = config.services.watch.all;
  s.services.names = config.services.watch.names;
  s.services.no_hint_wait = config.services.no_hint_wait;
  s.service_interval = config.services.interval;
  s.window_threshold = config.detection.window_hung;
  s.window_interval = config.sampling.interval;
  return s;
}

/// What one poll found: the symptoms that hold now, and for the keys it saw that do not hold,
/// what they are now (the resolution of an incident that was open for one).
struct SymptomWatchers::Poll {
  /// False when the platform could not be read: nothing is raised or cleared on it.
  bool read = true;
  std::string error;
  std::vector<Symptom> holding;
  std::map<std::string, std::string> state_of;
  /// The resolution of a key not in state_of, when the watch knows better than its default
  /// (nothing is watched any more).
  std::string unseen;
};

struct SymptomWatchers::Watch {
  Watch(boost::asio::io_context& io, IncidentKind k, std::string n,
        std::function<Poll(const SymptomWatchSettings&)> p,
        std::function<std::chrono::milliseconds(const SymptomWatchSettings&)> i, std::string gone)
      : kind(k),
        name(std::move(n)),
        poll(std::move(p)),
        interval(std::move(i)),
        gone_text(std::move(gone)),
        timer(io) {}
  IncidentKind kind;
  /// "services", "windows": for the log.
  std::string name;
  std::function<Poll(const SymptomWatchSettings&)> poll;
  std::function<std::chrono::milliseconds(const SymptomWatchSettings&)> interval;
  /// The resolution of a key the last poll did not see at all.
  std::string gone_text;
  boost::asio::steady_timer timer;
  // On the strand:
  bool in_flight = false;
  bool said_error = false;
  /// The keys that held at the last poll.
  std::set<std::string> held;
  /// Keys that stopped holding, with their resolution, until the monitor holds nothing for them:
  /// a symptom that went away while its process was still analysed opens its incident after the
  /// first clear, and must be cleared once more.
  std::map<std::string, std::string> clearing;
  /// Keys said to have no process to open an incident on (a service the SCM names none for).
  std::set<std::string> said_no_process;
};

SymptomWatchers::SymptomWatchers(Dependencies deps, const Config& config)
    : deps_(std::move(deps)),
      strand_(boost::asio::make_strand(deps_.io)),
      service_tracker_(deps_.clock),
      window_tracker_(deps_.clock),
      settings_(SymptomWatchSettings::from(config)) {}

SymptomWatchers::~SymptomWatchers() = default;

SymptomWatchSettings SymptomWatchers::settings() const {
  std::lock_guard lock(mutex_);
  return settings_;
}

void SymptomWatchers::start() {
  const auto now = settings();
  if (deps_.services != nullptr) {
    watches_.push_back(std::make_shared<Watch>(
        deps_.io, IncidentKind::kServiceHung, "services",
        [this](const SymptomWatchSettings& s) { return pollServices(s); },
        [](const SymptomWatchSettings& s) { return s.service_interval; },
        "the service is no longer installed"));
    if (watches(now.services)) {
      spdlog::info("watching {} for states stuck pending, every {} ms", describe(now.services),
                   now.service_interval.count());
    }
  } else if (watches(now.services)) {
    spdlog::warn(
        "services.watch has no effect on this platform: it has no service control "
        "manager whose pending states could be watched");
  }
  if (deps_.windows != nullptr) {
    watches_.push_back(std::make_shared<Watch>(
        deps_.io, IncidentKind::kWindowHung, "windows",
        [this](const SymptomWatchSettings& s) { return pollWindows(s); },
        [](const SymptomWatchSettings& s) { return s.window_interval; },
        "the window is gone, or its process is no longer watched"));
    if (now.window_threshold.count() > 0) {
      spdlog::info(
          "probing the windows of watched processes every {} ms: hung after {} ms "
          "without an answer",
          now.window_interval.count(), now.window_threshold.count());
    }
  } else if (now.window_threshold != HungWindowTracker::kDefaultThreshold &&
             now.window_threshold.count() > 0) {
    // Said only when set: the key is on by default, and saying so at every start here would
    // be noise.
    spdlog::warn(
        "detection.window_hung_ms has no effect on this platform: it has no windows "
        "to probe");
  }
  for (const auto& watch : watches_) {
    boost::asio::post(strand_, [this, watch] { arm(watch, std::chrono::milliseconds(0)); });
  }
}

void SymptomWatchers::reconfigure(const Config& config) {
  auto next = SymptomWatchSettings::from(config);
  std::lock_guard lock(mutex_);
  if (deps_.services != nullptr && !sameRules(next.services, settings_.services)) {
    spdlog::info("watching {} for states stuck pending now",
                 watches(next.services) ? describe(next.services) : std::string("no services"));
  }
  settings_ = std::move(next);
}

bool SymptomWatchers::stop() {
  std::promise<void> stopped;
  boost::asio::post(strand_, [this, &stopped] {
    stopped_ = true;
    for (const auto& watch : watches_) watch->timer.cancel();
    stopped.set_value();
  });
  // The pool runs the strand: this waits for a moment at most, unless every worker is stuck.
  if (stopped.get_future().wait_for(std::chrono::seconds(3)) != std::future_status::ready) {
    return false;
  }
  std::unique_lock lock(mutex_);
  return ended_.wait_for(lock, kStopWait, [this] { return in_flight_ == 0; });
}

void SymptomWatchers::arm(const std::shared_ptr<Watch>& watch, std::chrono::milliseconds delay) {
  watch->timer.expires_after(delay);
  watch->timer.async_wait(
      boost::asio::bind_executor(strand_, [this, watch](const boost::system::error_code& ec) {
        // A cancelled timer that had already expired still delivers success: the flag tells.
        if (ec || stopped_) return;
        run(watch);
        arm(watch, watch->interval(settings()));
      }));
}

void SymptomWatchers::run(const std::shared_ptr<Watch>& watch) {
  // The last poll is still reading (windows that each take their second): this turn is
  // skipped rather than queued.
  if (watch->in_flight) return;
  watch->in_flight = true;
  {
    std::lock_guard lock(mutex_);
    ++in_flight_;
  }
  deps_.work.post([this, watch, settings = settings()] {
    auto poll = watch->poll(settings);
    boost::asio::post(strand_, [this, watch, poll = std::move(poll)]() mutable {
      watch->in_flight = false;
      if (!stopped_) take(*watch, std::move(poll));
    });
    // Last: once stop() sees none in flight, the watchers may be gone.
    std::lock_guard lock(mutex_);
    --in_flight_;
    ended_.notify_all();
  });
}

void SymptomWatchers::take(Watch& watch, Poll poll) {
  if (!poll.read) {
    // Nothing is cleared on a reading that failed: whether the symptoms still hold is unknown.
    if (!watch.said_error) spdlog::warn("cannot watch {}: {}", watch.name, poll.error);
    watch.said_error = true;
    return;
  }
  if (watch.said_error) spdlog::info("{} can be watched again", watch.name);
  watch.said_error = false;
  std::set<std::string> now;
  for (auto& symptom : poll.holding) {
    now.insert(symptom.key);
    watch.clearing.erase(symptom.key);
    if (symptom.pid.value == 0) {
      if (watch.said_no_process.insert(symptom.key).second) {
        spdlog::warn("{}; no process runs it: no incident", symptom.summary);
      }
      continue;
    }
    // Raised at every poll while it holds: a no-op while its incident is open or opening.
    deps_.monitor.raiseSymptom(std::move(symptom), deps_.analysis);
  }
  for (const auto& key : watch.held) {
    if (now.contains(key)) continue;
    const auto state = poll.state_of.find(key);
    watch.clearing.insert_or_assign(
        key, state != poll.state_of.end()
                 ? state->second
                 : key + ": " + (poll.unseen.empty() ? watch.gone_text : poll.unseen));
    watch.said_no_process.erase(key);
  }
  watch.held = std::move(now);
  for (auto it = watch.clearing.begin(); it != watch.clearing.end();) {
    deps_.monitor.clearSymptom(watch.kind, it->first, it->second);
    it =
        deps_.monitor.symptomHeld(watch.kind, it->first) ? std::next(it) : watch.clearing.erase(it);
  }
}

SymptomWatchers::Poll SymptomWatchers::pollServices(const SymptomWatchSettings& settings) {
  Poll poll;
  const auto& rules = settings.services;
  if (!watches(rules)) {
    // Nothing watched: no reading of the SCM, and the tracker forgets what it was following,
    // so that a service watched again later gets its whole wait hint.
    static_cast<void>(service_tracker_.update({}, rules));
    poll.unseen = "no service is watched any more (services.watch)";
    return poll;
  }
  auto readings = deps_.services->list();
  if (!readings) {
    poll.read = false;
    poll.error = readings.error().message;
    return poll;
  }
  poll.holding = service_tracker_.update(*readings, rules);
  std::unordered_set<std::string> selected;
  for (const auto& n : rules.names) selected.insert(foldServiceName(n));
  for (const auto& r : *readings) {
    const std::string key = "service " + r.name;
    if (!rules.all && !selected.contains(foldServiceName(r.name))) {
      poll.state_of[key] = "service " + r.name + " is no longer watched";
    } else if (isPending(r.state)) {
      poll.state_of[key] = "service " + r.name + " moved on: " + toString(r.state) +
                           " at checkpoint " + std::to_string(r.checkpoint);
    } else {
      poll.state_of[key] = "service " + r.name + " is " + toString(r.state) + " now";
    }
  }
  return poll;
}

SymptomWatchers::Poll SymptomWatchers::pollWindows(const SymptomWatchSettings& settings) {
  Poll poll;
  std::vector<WindowOwner> owners;
  if (settings.window_threshold.count() > 0) {
    for (const auto& w : deps_.monitor.watched()) {
      owners.push_back({w.process.identity.pid, w.target->name});
    }
  }
  if (owners.empty()) {
    static_cast<void>(window_tracker_.update({}, {}, settings.window_threshold));
    if (settings.window_threshold.count() == 0) {
      poll.unseen = "windows are not probed any more (detection.window_hung_ms is 0)";
    }
    return poll;
  }
  std::vector<Pid> pids;
  for (const auto& o : owners) pids.push_back(o.pid);
  const auto probed_at = deps_.clock.steadyNow();
  auto readings = deps_.windows->windowsOf(pids);
  if (!readings) {
    poll.read = false;
    poll.error = readings.error().message;
    return poll;
  }
  poll.holding = window_tracker_.update(*readings, owners, settings.window_threshold, probed_at);
  for (const auto& r : *readings) {
    const std::string key = "window " + hexString(r.handle);
    poll.state_of[key] =
        r.responding ? key + " answers messages again" : key + ": its process is no longer watched";
  }
  return poll;
}

}  // namespace wctmon
