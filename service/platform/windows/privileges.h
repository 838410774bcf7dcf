#pragma once

#include <string>

namespace wctmon::windows_platform {

/// Whether SeDebugPrivilege is enabled in this process's token, and why not.
struct DebugPrivilege {
  bool enabled = false;
  /// Empty when enabled; otherwise one line for the log: the account lacks the privilege
  /// (ERROR_NOT_ALL_ASSIGNED), or the token could not be opened or adjusted.
  std::string why_not;
};

/// Enables SeDebugPrivilege, which lets OpenProcess/OpenThread reach processes of other users
/// and services. Called once at start; failing is not fatal: the service then inspects only what
/// its account may open, and threads it cannot open are reported as access denied.
[[nodiscard]] DebugPrivilege enableDebugPrivilege();

}  // namespace wctmon::windows_platform
