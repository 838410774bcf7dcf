#pragma once

#include <cstdint>
#include <string>

namespace wctmon {

/// An address or register value as operators read it: "0x7f12ab".
[[nodiscard]] std::string hexString(std::uint64_t value);

}  // namespace wctmon
