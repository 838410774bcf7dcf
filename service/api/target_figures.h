#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/incident.h"

namespace wctmon::api {

/// What the metrics report of one target: its open incidents by kind, when the oldest of each
/// kind opened, and how many processes it watches.
struct TargetFigures {
  std::string target;
  /// Open incidents, indexed by IncidentKind.
  std::array<std::uint64_t, kIncidentKindCount> open{};
  /// When the oldest open incident of each kind opened; none where none is open.
  std::array<std::optional<std::chrono::system_clock::time_point>, kIncidentKindCount> oldest{};
  std::size_t watched = 0;
};

/// The figures of every target named in `watched` (target → processes watched, as
/// Monitor::watchedByTarget() gives every configured target) or by an open incident (a target
/// removed while its incident stays open, the "services" of the SCM's watcher), by name.
[[nodiscard]] std::vector<TargetFigures> targetFigures(
    const std::map<std::string, std::size_t>& watched, const std::vector<Incident>& open);

}  // namespace wctmon::api
