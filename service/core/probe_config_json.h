// The JSON form of a target's probe: read from the configuration (strictly, every problem with
// its pointer) and written back (a target registered through the API is listed as given).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config_error.h"
#include "core/probe_config.h"

namespace wctmon {

/// Reads `targets[].probe` at `pointer`, its problems into `errors`; whether a usable probe was
/// read.
bool readProbe(const nlohmann::json& j, const std::string& pointer, ProbeConfig& probe,
               std::vector<ConfigError>& errors);

/// The JSON form of a probe, as readProbe reads it.
[[nodiscard]] nlohmann::json probeToJson(const ProbeConfig& probe);

}  // namespace wctmon
