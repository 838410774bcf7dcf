#include <cstdlib>

#include "client/defaults.h"

namespace wctmon::client {

const Defaults& defaults() {
  // %ProgramData%\wctmon, as the service; the API on loopback only (no Unix socket).
  static const Defaults d = [] {
    const wchar_t* program_data = ::_wgetenv(L"ProgramData");
    const std::filesystem::path base = program_data != nullptr && *program_data != L'\0'
                                           ? std::filesystem::path(program_data)
                                           : std::filesystem::path(L"C:\\ProgramData");
    return Defaults{{},
                    "127.0.0.1:7787",
                    base / "wctmon",
                    "an administrator or a member of Performance Monitor Users"};
  }();
  return d;
}

}  // namespace wctmon::client
