#include "core/incident_feed.h"

#include <utility>

namespace wctmon {

IncidentFeed::Subscription::Subscription(Subscription&& other) noexcept
    : feed_(std::exchange(other.feed_, nullptr)), id_(other.id_) {}

IncidentFeed::Subscription& IncidentFeed::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    feed_ = std::exchange(other.feed_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

IncidentFeed::Subscription::~Subscription() { reset(); }

void IncidentFeed::Subscription::reset() {
  if (feed_ != nullptr) std::exchange(feed_, nullptr)->unsubscribe(id_);
}

IncidentFeed::Subscription IncidentFeed::subscribe(const Initial& initial, Listener listener) {
  MutexLock lock(mutex_);
  initial(*openIncidents());  // what open_ holds: published under this lock
  const auto id = next_id_++;
  listeners_.emplace(id, std::move(listener));
  return Subscription(this, id);
}

void IncidentFeed::publish(IncidentEvent event) {
  auto shared = std::make_shared<const IncidentEvent>(std::move(event));
  const auto& incident = shared->incident;
  MutexLock lock(mutex_);
  if (shared->type == IncidentEvent::Type::kResolved) {
    open_.erase(incident.id);
  } else {
    open_.insert_or_assign(incident.id, incident);
  }
  publishOpen();
  for (const auto& [id, listener] : listeners_) listener(shared);
}

void IncidentFeed::seed(const std::vector<Incident>& open) {
  MutexLock lock(mutex_);
  for (const auto& incident : open) {
    if (incident.state == IncidentState::kOpen) open_.insert_or_assign(incident.id, incident);
  }
  publishOpen();
}

void IncidentFeed::publishOpen() {
  std::vector<Incident> open;
  open.reserve(open_.size());
  for (const auto& [id, incident] : open_) open.push_back(incident);
  auto shared = std::make_shared<const std::vector<Incident>>(std::move(open));
  MutexLock lock(published_mutex_);
  published_ = std::move(shared);
}

std::shared_ptr<const std::vector<Incident>> IncidentFeed::openIncidents() const {
  MutexLock lock(published_mutex_);
  return published_;
}

void IncidentFeed::addRecordedEffects(Incident& incident) const {
  MutexLock lock(mutex_);
  auto it = open_.find(incident.id);
  if (it == open_.end()) return;
  if (incident.evidence.empty()) incident.evidence = it->second.evidence;
  if (!incident.dump) incident.dump = it->second.dump;
}

std::size_t IncidentFeed::subscribers() const {
  MutexLock lock(mutex_);
  return listeners_.size();
}

void IncidentFeed::unsubscribe(std::uint64_t id) {
  MutexLock lock(mutex_);
  listeners_.erase(id);
}

}  // namespace wctmon
