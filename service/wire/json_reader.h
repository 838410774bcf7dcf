#pragma once

#include <string_view>
#include <vector>

#include "model/incident.h"
#include "model/result.h"
#include "model/wait_model.h"

namespace wctmon::rpc {

/// Reads back what chainsToJson / capturesToJson / processesToJson wrote (the proto3 JSON
/// mapping).
[[nodiscard]] Result<std::vector<WaitChain>> chainsFromJson(std::string_view text);
[[nodiscard]] Result<std::vector<ThreadCapture>> capturesFromJson(std::string_view text);
[[nodiscard]] Result<std::vector<IncidentProcess>> processesFromJson(std::string_view text);

}  // namespace wctmon::rpc
