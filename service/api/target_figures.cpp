#include "api/target_figures.h"

namespace wctmon::api {

std::vector<TargetFigures> targetFigures(const std::map<std::string, std::size_t>& watched,
                                         const std::vector<Incident>& open) {
  std::map<std::string, TargetFigures> by_name;
  for (const auto& [name, count] : watched) {
    auto& figures = by_name[name];
    figures.target = name;
    figures.watched = count;
  }
  for (const auto& incident : open) {
    auto& figures = by_name[incident.target];
    figures.target = incident.target;
    const auto kind = static_cast<std::size_t>(incident.kind);
    ++figures.open[kind];
    auto& oldest = figures.oldest[kind];
    if (!oldest || incident.opened_at < *oldest) oldest = incident.opened_at;
  }
  std::vector<TargetFigures> out;
  out.reserve(by_name.size());
  for (auto& [name, figures] : by_name) out.push_back(std::move(figures));
  return out;
}

}  // namespace wctmon::api
