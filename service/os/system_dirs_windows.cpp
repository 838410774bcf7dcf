#include <windows.h>
// These need windows.h first.
#include <knownfolders.h>
#include <shlobj.h>

#include <cstdlib>

#include "os/system_dirs.h"

namespace wctmon {
namespace {

/// The ProgramData folder as the shell knows it (C:\ProgramData unless the system moved it).
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

std::filesystem::path serviceStateDir() { return programData() / "wctmon"; }

bool stderrIsJournal() { return false; }

}  // namespace wctmon
