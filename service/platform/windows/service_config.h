#pragma once

#include <windows.h>

#include <filesystem>
#include <string>
#include <vector>

#include "model/result.h"

namespace wctmon::windows_platform {

/// The service's restarts after a failure (a crash, or a stop with a service-specific exit
/// code): 10 s, 30 s, then 60 s after each later one; the count starts again after a day
/// without failure.
inline constexpr DWORD kRestartDelaysMs[] = {10'000, 30'000, 60'000};
inline constexpr DWORD kFailureResetSeconds = 24 * 60 * 60;

/// The only privileges the service's token keeps (SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO):
/// SeDebugPrivilege opens other accounts' processes and threads for WCT and the capture;
/// SeChangeNotifyPrivilege (traverse) is always kept. Nothing reads security logs or SACLs, so
/// SeSecurityPrivilege is not asked for.
inline constexpr wchar_t kRequiredPrivileges[] = L"SeDebugPrivilege\0SeChangeNotifyPrivilege\0";

/// The state directory's access list: SYSTEM and Administrators full, inherited by what is made
/// in it, nothing for anyone else (ProgramData itself lets Users read).
inline constexpr const wchar_t* kStateDirSddl = L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
/// What the MSI cannot say with wixl (no WiX extensions), applied to the installed service
/// `WctMon` (wctmond --configure-service, a deferred custom action of the MSI; idempotent):
/// failure actions (kRestartDelaysMs, kFailureResetSeconds, also on non-crash failures), delayed
/// automatic start, an unrestricted service SID, the required privileges, the preshutdown
/// timeout (kPreshutdownTimeout); the event source registered with this executable as its
/// message file; and `state_dir` created with kStateDirSddl. Returns the settings this system
/// does not know (Wine knows few of them; Windows since Vista all), applied as far as it goes;
/// the error names the step that failed.
[[nodiscard]] Result<std::vector<std::string>> configureService(
    const std::filesystem::path& state_dir);

/// Undoes what is not removed with the service (wctmond --remove-service-config, run by the MSI
/// on uninstall; idempotent): the event source's registration. With `purge`, `state_dir` too
/// (the configuration, the store, the tokens); kept otherwise.
[[nodiscard]] Status removeServiceConfig(const std::filesystem::path& state_dir, bool purge);

/// Applies `sddl` to `path` (a protected access list: nothing inherited from its parent).
[[nodiscard]] Status applyAccessList(const std::filesystem::path& path, const wchar_t* sddl);

/// The access list of `path` in SDDL, "" when it cannot be read.
[[nodiscard]] std::wstring accessList(const std::filesystem::path& path);

}  // namespace wctmon::windows_platform
