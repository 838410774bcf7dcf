// One of the per-platform files CMake chooses: the only place in core with an OS header.
#include <windows.h>
// These need windows.h first.
#include <knownfolders.h>
#include <shlobj.h>

#include <cstdlib>

#include "core/config.h"

namespace wctmon {
namespace {

/// The ProgramData folder as the shell knows it (C:\ProgramData unless the system moved it): the
/// MSI's CommonAppDataFolder, where it installs the configuration. Not the environment's
/// %ProgramData%, which a service does not always have as users do (Wine gives its services
/// another one).
std::filesystem::path programData() {
  wchar_t* known = nullptr;
  if (::SHGetKnownFolderPath(FOLDERID_ProgramData, KF_FLAG_DEFAULT, nullptr, &known) == S_OK) {
    std::filesystem::path path(known);
    ::CoTaskMemFree(known);
    return path;
  }
  ::CoTaskMemFree(known);
  // The wide form: a path outside the ANSI code page stays whole.
  const wchar_t* variable = ::_wgetenv(L"ProgramData");
  return variable != nullptr && *variable != L'\0' ? std::filesystem::path(variable)
                                                   : std::filesystem::path(L"C:\\ProgramData");
}

}  // namespace

const PlatformDefaults& platformDefaults() {
  // Read once.
  static const PlatformDefaults defaults = [] {
    // The API on loopback only: the service's local clients and dashboards reach it there.
    return PlatformDefaults{
        programData() / "wctmon", {std::string(kDefaultApiAddress)}, AlertSinkKind::kEventLog};
  }();
  return defaults;
}

}  // namespace wctmon
