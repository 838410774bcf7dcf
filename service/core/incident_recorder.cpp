#include "core/incident_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace wctmon {

IncidentRecorder::IncidentRecorder(Dependencies deps) : deps_(std::move(deps)) {
  if (deps_.store == nullptr) return;
  if (auto last = deps_.store->lastId()) {
    last_id_ = *last;
  } else {
    spdlog::error("{}", last.error().message);
  }
}

IncidentRecorder::~IncidentRecorder() {
  if (deps_.store == nullptr || pending_writes_.empty()) return;
  writeStore(/*force=*/true);
  if (!pending_writes_.empty()) {
    spdlog::error(
        "{} incident change(s) could not be written to the store before the monitor "
        "stopped",
        pending_writes_.size());
  }
}

Incident IncidentRecorder::record(Incident incident, IncidentEvent::Type type) {
  // Decided before its capture and dump came back: records are rewritten whole.
  feed_.addRecordedEffects(incident);
  if (incident.id > last_id_) last_id_ = incident.id;
  if (deps_.store != nullptr) {
    if (auto dropped = pending_writes_.push(incident, type == IncidentEvent::Type::kOpened)) {
      ++counters_.store_writes_dropped;
      if (!drop_reported_) {
        drop_reported_ = true;
        spdlog::error(
            "{} incident changes wait for the store, as many as are kept: the oldest are dropped "
            "from now on (first incident {}); a record dropped while open is resolved at the next "
            "start",
            pending_writes_.capacity(), *dropped);
      }
    }
    writeStore(/*force=*/false);
  }
  feed_.publish({type, incident});
  return incident;
}

std::vector<Incident> IncidentRecorder::storedOpenIncidents() const {
  if (deps_.store == nullptr) return {};
  auto open = deps_.store->list(IncidentQuery::by(IncidentState::kOpen));
  if (!open) {
    spdlog::error("{}", open.error().message);
    return {};
  }
  if (!open->warning.empty()) spdlog::warn("{}", open->warning);
  return std::move(open->incidents);
}

void IncidentRecorder::applyRetention(const Config::Retention& retention) const {
  if (deps_.store == nullptr) return;
  auto removed =
      deps_.store->applyRetention(deps_.clock.now(), retention.max_age, retention.max_incidents);
  if (!removed) {
    spdlog::error("{}", removed.error().message);
  } else if (*removed > 0) {
    spdlog::info("retention removed {} resolved incident(s)", *removed);
  }
}

bool IncidentRecorder::keeps(std::int64_t id) const {
  if (deps_.store == nullptr) return true;
  const auto open = feed_.openIncidents();
  if (std::any_of(open->begin(), open->end(), [id](const Incident& i) { return i.id == id; })) {
    return true;
  }
  // Above the store's last id: given, and waiting to be written (the store refused it).
  const auto last = deps_.store->lastId();
  if (!last || id > *last) return true;
  const auto stored = deps_.store->get(id);
  return !stored || stored->has_value();
}

void IncidentRecorder::checkStore() {
  if (deps_.store != nullptr) writeStore(/*force=*/false);
}

void IncidentRecorder::writeStore(bool force) {
  // While the store fails, the waiting writes are tried again at most once a second (at a
  // discovery, or with a new change), not once per change.
  const auto now = deps_.clock.steadyNow();
  if (store_failing_ && !force && now - last_store_attempt_ < kStoreRetryInterval) {
    counters_.pending_writes = pending_writes_.size();
    return;
  }
  last_store_attempt_ = now;
  const auto current = deps_.store->ensureCurrent();
  if (!current) {
    storeFailed(current.error());
  } else {
    if (!current->empty()) storeRemade(*current);
    const auto flushed = pending_writes_.flush(*deps_.store, [this](const Error& refused) {
      spdlog::error("{}", refused.message);
      ++counters_.store_errors;
    });
    if (!flushed) {
      storeFailed(flushed.error());
    } else if (store_failing_) {
      store_failing_ = false;
      drop_reported_ = false;
      spdlog::info(
          "the incident store takes writes again: every waiting incident change is written");
      sendStoreAlert(AlertKind::kStoreRecovered, AlertSeverity::kInfo,
                     "the incident store takes writes again; every incident change that waited "
                     "is written",
                     "");
    }
  }
  counters_.pending_writes = pending_writes_.size();
}

void IncidentRecorder::storeFailed(const Error& error) {
  ++counters_.store_errors;
  if (store_failing_) {
    spdlog::debug("{}", error.message);
    return;
  }
  // Once per outage, however many incidents it holds back.
  store_failing_ = true;
  spdlog::error(
      "{}; incident changes wait in memory (at most {} incidents) and are written when the store "
      "takes them again",
      error.message, pending_writes_.capacity());
  sendStoreAlert(AlertKind::kStoreFault, AlertSeverity::kError,
                 "incidents cannot be written: " + error.message +
                     "; they wait in memory and are written when the store takes them again",
                 error.message);
}

void IncidentRecorder::storeRemade(const std::string& what) {
  // Ids are never given twice, even by the service's next start on the new file.
  if (auto kept = deps_.store->keepIdsAbove(last_id_); !kept) {
    spdlog::error("{}", kept.error().message);
  }
  // The open incidents (with their evidence) and the runtime targets go into the new file, so
  // that nothing live is lost; resolved ones were in the file that went.
  const auto open = feed_.openIncidents();
  for (const auto& incident : *open) (void)pending_writes_.push(incident, /*is_new=*/true);
  const auto targets =
      deps_.runtime_targets ? deps_.runtime_targets() : std::vector<TargetConfig>{};
  for (const auto& target : targets) {
    if (auto put = deps_.store->putTarget(target); !put) spdlog::error("{}", put.error().message);
  }
  spdlog::error(
      "{}: a new incident store was made there; {} open incident(s) and {} runtime "
      "target(s) are written to it again",
      what, open->size(), targets.size());
  sendStoreAlert(AlertKind::kStoreFault, AlertSeverity::kError,
                 what + ": a new incident store was made there, with the " +
                     std::to_string(open->size()) + " open incident(s)",
                 what);
}

void IncidentRecorder::sendStoreAlert(AlertKind kind, AlertSeverity severity, std::string message,
                                      std::string reason) {
  if (deps_.alerts == nullptr) return;
  Alert a;
  a.kind = kind;
  a.severity = severity;
  a.message = std::move(message);
  if (!reason.empty()) a.fields.emplace_back("REASON", std::move(reason));
  (void)deps_.alerts->send(a);
}

}  // namespace wctmon
