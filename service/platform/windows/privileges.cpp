#include "platform/windows/privileges.h"

#include <windows.h>

#include <memory>

#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {

DebugPrivilege enableDebugPrivilege() {
  DebugPrivilege out;
  HANDLE raw = nullptr;
  if (::OpenProcessToken(::GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &raw) ==
      FALSE) {
    out.why_not = "cannot open the process token: " + lastErrorText(::GetLastError());
    return out;
  }
  const std::unique_ptr<void, decltype(&::CloseHandle)> token(raw, &::CloseHandle);
  TOKEN_PRIVILEGES privileges{};
  privileges.PrivilegeCount = 1;
  privileges.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  if (::LookupPrivilegeValueW(nullptr, SE_DEBUG_NAME, &privileges.Privileges[0].Luid) == FALSE) {
    out.why_not = "cannot look up SeDebugPrivilege: " + lastErrorText(::GetLastError());
    return out;
  }
  // AdjustTokenPrivileges succeeds even when the token does not hold the privilege: only
  // GetLastError() tells, with ERROR_NOT_ALL_ASSIGNED, and must be read after every call.
  const BOOL adjusted =
      ::AdjustTokenPrivileges(token.get(), FALSE, &privileges, 0, nullptr, nullptr);
  const DWORD error = ::GetLastError();
  if (adjusted == FALSE) {
    out.why_not = "cannot enable SeDebugPrivilege: " + lastErrorText(error);
  } else if (error == ERROR_NOT_ALL_ASSIGNED) {
    out.why_not =
        "the account does not hold SeDebugPrivilege (ERROR_NOT_ALL_ASSIGNED): processes of other "
        "users and services cannot be opened; run as an administrator or LocalSystem";
  } else {
    out.enabled = true;
  }
  return out;
}

}  // namespace wctmon::windows_platform
