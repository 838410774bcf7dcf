#pragma once

#include <string>

#include "core/config.h"

namespace wctmon::app {

/// Installs the service's default logger: asynchronous, with a bounded queue that drops the
/// oldest message rather than block a worker, to the console and/or a rotating file. Returns an
/// error text, empty on success.
[[nodiscard]] std::string setUpLogging(const Config& config);

/// Flushes and stops the asynchronous logger.
void shutDownLogging();

}  // namespace wctmon::app
