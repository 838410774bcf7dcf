#include <cstdlib>

#include "core/config.h"

namespace wctmon {

const PlatformDefaults& platformDefaults() {
  // %ProgramData% (C:\ProgramData unless the system moved it), read once.
  static const PlatformDefaults defaults = [] {
    // The wide form: a path outside the ANSI code page stays whole.
    const wchar_t* program_data = ::_wgetenv(L"ProgramData");
    std::filesystem::path base = program_data != nullptr && *program_data != L'\0'
                                     ? std::filesystem::path(program_data)
                                     : std::filesystem::path(L"C:\\ProgramData");
    // The API on loopback only: the service's local clients and dashboards reach it there.
    return PlatformDefaults{
        base / "wctmon", {std::string(kDefaultApiAddress)}, AlertSinkKind::kEventLog};
  }();
  return defaults;
}

}  // namespace wctmon
