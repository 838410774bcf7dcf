#pragma once

#include <CLI/CLI.hpp>
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

/// Declares the `incidents` options on `command`, filling `args`.
void addIncidentsOptions(CLI::App& command, IncidentsArgs& args);

}  // namespace wctmon::app
