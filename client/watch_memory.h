#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "wctmon/v1/monitor.pb.h"

namespace wctmon::client {

/// What a watch has printed, so that a stream opened again after a reconnection prints only
/// news: each stream starts with every open incident (TYPE_EXISTING), most of them shown
/// already.
class WatchMemory {
 public:
  /// Whether `event` is news to print, and remembers it. An existing incident shown before with
  /// the same last change is no news; one that changed meanwhile becomes TYPE_UPDATED; a
  /// resolution shown before is no news.
  [[nodiscard]] bool admit(v1::IncidentEvent& event);

  /// The incidents shown open and not shown resolved: those whose resolution a reconnection may
  /// have missed.
  [[nodiscard]] std::vector<std::int64_t> shownOpen() const;

 private:
  /// Open incidents shown, by id: their updated_at as last shown.
  std::map<std::int64_t, std::string> open_;
  std::set<std::int64_t> resolved_;
};

}  // namespace wctmon::client
