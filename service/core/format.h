#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ids.h"

namespace wctmon {

/// An address or register value as operators read it: "0x7f12ab".
[[nodiscard]] std::string hexString(std::uint64_t value);

/// A thread as the WCT sample writes it: "[pid:tid]".
[[nodiscard]] std::string threadLabel(ThreadRef thread);

/// Threads as a compact list: "pid:tid pid:tid" (alert fields, the store).
[[nodiscard]] std::string threadList(const std::vector<ThreadRef>& threads);

}  // namespace wctmon
