#include "core/pending_writes.h"

#include <algorithm>

namespace wctmon {

std::optional<std::int64_t> PendingWrites::push(const Incident& incident, bool is_new) {
  if (auto it = by_id_.find(incident.id); it != by_id_.end()) {
    // Its place in the order is kept: the row it needs first is made as early as decided.
    it->second->incident = incident;
    it->second->is_new = it->second->is_new || is_new;
    return std::nullopt;
  }
  std::optional<std::int64_t> dropped;
  if (order_.size() >= capacity_) {
    auto victim = std::find_if(order_.begin(), order_.end(), [](const Entry& e) {
      return e.incident.state == IncidentState::kResolved;
    });
    if (victim == order_.end()) victim = order_.begin();
    dropped = victim->incident.id;
    by_id_.erase(victim->incident.id);
    order_.erase(victim);
    ++dropped_;
  }
  order_.push_back(Entry{incident, is_new});
  by_id_[incident.id] = std::prev(order_.end());
  return dropped;
}

Status PendingWrites::flush(IncidentRepository& store,
                            const std::function<void(const Error&)>& refused) {
  while (!order_.empty()) {
    if (auto s = write(store, order_.front()); !s) {
      if (s.error().code == ErrorCode::kIo) return s;
      refused(s.error());
    }
    by_id_.erase(order_.front().incident.id);
    order_.pop_front();
  }
  return std::monostate{};
}

Status PendingWrites::write(IncidentRepository& store, const Entry& entry) {
  // kInvalidArgument is the store's "that row is there" (insert) or "there is none" (update):
  // the other write then stores it whole. Any other failure (the disk, the file) is kept.
  if (entry.is_new) {
    auto id = store.insert(entry.incident);
    if (id) return std::monostate{};
    if (id.error().code != ErrorCode::kInvalidArgument) return id.error();
    return store.update(entry.incident);
  }
  auto updated = store.update(entry.incident);
  if (updated || updated.error().code != ErrorCode::kInvalidArgument) return updated;
  auto id = store.insert(entry.incident);
  if (!id) return id.error();
  return std::monostate{};
}

}  // namespace wctmon
