#include "client/watch_memory.h"

namespace wctmon::client {

bool WatchMemory::admit(v1::IncidentEvent& event) {
  const auto& incident = event.incident();
  const auto id = incident.id();
  const std::string changed = std::to_string(incident.updated_at().seconds()) + "." +
                              std::to_string(incident.updated_at().nanos());
  switch (event.type()) {
    case v1::IncidentEvent::TYPE_EXISTING: {
      const auto shown = open_.find(id);
      if (shown != open_.end() && shown->second == changed) return false;
      // Changed while no stream was open: to whoever reads the output, an update.
      if (shown != open_.end()) event.set_type(v1::IncidentEvent::TYPE_UPDATED);
      open_[id] = changed;
      return true;
    }
    case v1::IncidentEvent::TYPE_RESOLVED:
      open_.erase(id);
      return resolved_.insert(id).second;
    default:
      open_[id] = changed;
      return true;
  }
}

std::vector<std::int64_t> WatchMemory::shownOpen() const {
  std::vector<std::int64_t> ids;
  for (const auto& [id, changed] : open_) ids.push_back(id);
  return ids;
}

}  // namespace wctmon::client
