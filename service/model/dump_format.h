#pragma once

#include <cstdint>
#include <string_view>

namespace wctmon {

/// Where a dump wctmon writes carries its diagnosis: an ELF note of this owner and type in a
/// core, a user stream of this type in a minidump.
inline constexpr std::uint32_t kDumpDiagnosisType = 0x57430001;
inline constexpr std::string_view kDumpDiagnosisOwner = "WCTMON";

}  // namespace wctmon
