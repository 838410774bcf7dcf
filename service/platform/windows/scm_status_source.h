#pragma once

#include <windows.h>

#include <optional>

#include "core/ports/service_status_source.h"

namespace wctmon::windows_platform {

/// A SERVICE_* state (SERVICE_START_PENDING, ...) as the domain's; nullopt for a value Windows
/// does not define.
[[nodiscard]] std::optional<ServiceState> serviceStateOf(DWORD state);

/// The status of every Win32 service (own and shared processes; drivers have no process to
/// explain a hang with), from one EnumServicesStatusExW of the service control manager: state,
/// checkpoint, wait hint and process id as the service last reported them with
/// SetServiceStatus. Each reading connects afresh (one RPC), so an SCM that cannot be reached
/// now is an error of this reading only.
class ScmStatusSource final : public ServiceStatusSource {
 public:
  [[nodiscard]] Result<std::vector<ServiceReading>> list() override;
};

}  // namespace wctmon::windows_platform
