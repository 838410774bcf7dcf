#pragma once

#include <cstddef>
#include <string>

namespace wctmon::app {

struct IncidentsArgs {
  std::string config;
  bool json = false;
  std::string state = "all";  // open | resolved | all
  std::size_t limit = 0;
};

/// `wctmon incidents`: lists incidents straight from the store, whether the service runs or not.
[[nodiscard]] int runIncidents(const IncidentsArgs& args);

/// `wctmon validate-config FILE`: 0 when valid, 1 with one line per problem otherwise.
[[nodiscard]] int runValidateConfig(const std::string& file);

}  // namespace wctmon::app
