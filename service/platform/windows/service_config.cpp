#include "platform/windows/service_config.h"

// These need windows.h first.
#include <aclapi.h>
#include <sddl.h>

#include <vector>

#include "platform/windows/event_log_alert_sink.h"
#include "platform/windows/handle.h"
#include "platform/windows/scm_service.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

Error failure(const std::string& step, DWORD code) {
  return makeError(ErrorCode::kIo, step + ": " + lastErrorText(code));
}

std::wstring modulePath() {
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
    if (n < path.size()) {
      path.resize(n);
      return path;
    }
    path.resize(path.size() * 2);
  }
}

/// Applies each setting; a setting this system does not know (ERROR_INVALID_LEVEL: Wine knows
/// few of them) is named in `unknown` and the rest go on; any other failure is the error.
Status configureScm(std::vector<std::string>& unknown) {
  ServiceHandle scm(::OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT));
  if (scm.get() == nullptr)
    return failure("cannot open the service control manager", ::GetLastError());
  // SERVICE_START: failure actions that restart the service need it.
  ServiceHandle service(::OpenServiceW(
      scm.get(), kServiceName, SERVICE_CHANGE_CONFIG | SERVICE_START | SERVICE_QUERY_CONFIG));
  if (service.get() == nullptr) {
    return failure("cannot open the service WctMon (is it installed?)", ::GetLastError());
  }
  const auto change = [&](DWORD level, void* info, const char* what) -> Status {
    if (::ChangeServiceConfig2W(service.get(), level, info) == FALSE) {
      const DWORD error = ::GetLastError();
      if (error == ERROR_INVALID_LEVEL) {
        unknown.emplace_back(what);
        return std::monostate{};
      }
      return failure(std::string("cannot set the service's ") + what, error);
    }
    return std::monostate{};
  };

  std::vector<SC_ACTION> actions;
  for (const DWORD delay : kRestartDelaysMs) actions.push_back({SC_ACTION_RESTART, delay});
  SERVICE_FAILURE_ACTIONSW failure_actions{};
  failure_actions.dwResetPeriod = kFailureResetSeconds;
  failure_actions.cActions = static_cast<DWORD>(actions.size());
  failure_actions.lpsaActions = actions.data();
  if (auto s = change(SERVICE_CONFIG_FAILURE_ACTIONS, &failure_actions, "failure actions"); !s) {
    return s;
  }
  // A stop with a service-specific exit code (a failed start, every worker stuck) restarts it
  // as a crash does.
  SERVICE_FAILURE_ACTIONS_FLAG on_non_crash{TRUE};
  if (auto s = change(SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, &on_non_crash,
                      "failure actions on non-crash failures");
      !s) {
    return s;
  }
  SERVICE_DELAYED_AUTO_START_INFO delayed{TRUE};
  if (auto s = change(SERVICE_CONFIG_DELAYED_AUTO_START_INFO, &delayed, "delayed automatic start");
      !s) {
    return s;
  }
  SERVICE_SID_INFO sid{SERVICE_SID_TYPE_UNRESTRICTED};
  if (auto s = change(SERVICE_CONFIG_SERVICE_SID_INFO, &sid, "service SID type"); !s) return s;
  std::wstring privileges(kRequiredPrivileges, std::size(kRequiredPrivileges));
  SERVICE_REQUIRED_PRIVILEGES_INFOW required{privileges.data()};
  if (auto s = change(SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO, &required, "required privileges");
      !s) {
    return s;
  }
  SERVICE_PRESHUTDOWN_INFO preshutdown{static_cast<DWORD>(kPreshutdownTimeout.count())};
  return change(SERVICE_CONFIG_PRESHUTDOWN_INFO, &preshutdown, "preshutdown timeout");
}

Status setValue(HKEY key, const wchar_t* name, DWORD type, const void* data, DWORD size) {
  const LSTATUS status = ::RegSetValueExW(key, name, 0, type, static_cast<const BYTE*>(data), size);
  if (status != ERROR_SUCCESS) {
    return failure("cannot set the event source's " + toUtf8(name), static_cast<DWORD>(status));
  }
  return std::monostate{};
}

Status registerEventSource() {
  HKEY key = nullptr;
  const LSTATUS created = ::RegCreateKeyExW(HKEY_LOCAL_MACHINE, kEventSourceKey, 0, nullptr, 0,
                                            KEY_SET_VALUE, nullptr, &key, nullptr);
  if (created != ERROR_SUCCESS) {
    return failure("cannot register the event source wctmon", static_cast<DWORD>(created));
  }
  const std::wstring self = modulePath();
  const auto bytes = static_cast<DWORD>((self.size() + 1) * sizeof(wchar_t));
  const DWORD types = EVENTLOG_ERROR_TYPE | EVENTLOG_WARNING_TYPE | EVENTLOG_INFORMATION_TYPE;
  Status s = setValue(key, L"EventMessageFile", REG_EXPAND_SZ, self.c_str(), bytes);
  if (s) s = setValue(key, L"CategoryMessageFile", REG_EXPAND_SZ, self.c_str(), bytes);
  if (s) s = setValue(key, L"CategoryCount", REG_DWORD, &kEventCategoryCount, sizeof(DWORD));
  if (s) s = setValue(key, L"TypesSupported", REG_DWORD, &types, sizeof(DWORD));
  ::RegCloseKey(key);
  return s;
}

}  // namespace

Status applyAccessList(const std::filesystem::path& path, const wchar_t* sddl) {
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (::ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, &descriptor,
                                                             nullptr) == FALSE) {
    return failure("cannot make the access list of " + path.string(), ::GetLastError());
  }
  BOOL present = FALSE;
  BOOL defaulted = FALSE;
  PACL dacl = nullptr;
  ::GetSecurityDescriptorDacl(descriptor, &present, &dacl, &defaulted);
  std::wstring name = path.wstring();
  const DWORD error = ::SetNamedSecurityInfoW(
      name.data(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
      nullptr, nullptr, dacl, nullptr);
  ::LocalFree(descriptor);
  if (error != ERROR_SUCCESS)
    return failure("cannot set the access list of " + path.string(), error);
  return std::monostate{};
}

std::wstring accessList(const std::filesystem::path& path) {
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (::GetNamedSecurityInfoW(path.c_str(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, nullptr,
                              nullptr, nullptr, nullptr, &descriptor) != ERROR_SUCCESS) {
    return {};
  }
  wchar_t* text = nullptr;
  std::wstring out;
  if (::ConvertSecurityDescriptorToStringSecurityDescriptorW(
          descriptor, SDDL_REVISION_1, DACL_SECURITY_INFORMATION, &text, nullptr) != FALSE) {
    out = text;
    ::LocalFree(text);
  }
  ::LocalFree(descriptor);
  return out;
}

Result<std::vector<std::string>> configureService(const std::filesystem::path& state_dir) {
  std::vector<std::string> unknown;
  if (auto s = configureScm(unknown); !s) return s.error();
  if (auto s = registerEventSource(); !s) return s.error();
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    return makeError(ErrorCode::kIo, "cannot create the state directory " + state_dir.string() +
                                         ": " + ec.message());
  }
  if (auto s = applyAccessList(state_dir, kStateDirSddl); !s) return s.error();
  return unknown;
}

Status removeServiceConfig(const std::filesystem::path& state_dir, bool purge) {
  const LSTATUS deleted = ::RegDeleteTreeW(HKEY_LOCAL_MACHINE, kEventSourceKey);
  if (deleted != ERROR_SUCCESS && deleted != ERROR_FILE_NOT_FOUND) {
    return failure("cannot remove the event source wctmon", static_cast<DWORD>(deleted));
  }
  if (!purge) return std::monostate{};
  std::error_code ec;
  std::filesystem::remove_all(state_dir, ec);
  if (ec) {
    return makeError(ErrorCode::kIo, "cannot remove the state directory " + state_dir.string() +
                                         ": " + ec.message());
  }
  return std::monostate{};
}

}  // namespace wctmon::windows_platform
