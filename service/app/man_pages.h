#pragma once

#include <string>

#include "cli/man_page.h"

namespace wctmon::app {

/// What wctmon(8) and wctmond(8) say beyond their option tables: what they are, exit status,
/// files, signals. `date` is the release's.
[[nodiscard]] cli::ManPage wctmonManPage(const std::string& date);
[[nodiscard]] cli::ManPage wctmondManPage(const std::string& date);

}  // namespace wctmon::app
