#include "platform/windows/scm_status_source.h"

#include <vector>

#include "platform/windows/handle.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

Error failure(const char* step, DWORD code) {
  return makeError(code == ERROR_ACCESS_DENIED ? ErrorCode::kAccessDenied : ErrorCode::kIo,
                   std::string(step) + ": " + lastErrorText(code));
}

/// Enough for a few hundred services (a Windows Server lists about 300): usually one call.
constexpr std::size_t kFirstBufferBytes = 256 * 1024;

}  // namespace

std::optional<ServiceState> serviceStateOf(DWORD state) {
  switch (state) {
    case SERVICE_STOPPED:
      return ServiceState::kStopped;
    case SERVICE_START_PENDING:
      return ServiceState::kStartPending;
    case SERVICE_STOP_PENDING:
      return ServiceState::kStopPending;
    case SERVICE_RUNNING:
      return ServiceState::kRunning;
    case SERVICE_CONTINUE_PENDING:
      return ServiceState::kContinuePending;
    case SERVICE_PAUSE_PENDING:
      return ServiceState::kPausePending;
    case SERVICE_PAUSED:
      return ServiceState::kPaused;
    default:
      return std::nullopt;
  }
}

Result<std::vector<ServiceReading>> ScmStatusSource::list() {
  ServiceHandle scm(::OpenSCManagerW(nullptr, nullptr, SC_MANAGER_ENUMERATE_SERVICE));
  if (!scm.valid()) return failure("cannot open the service control manager", ::GetLastError());

  // Services come and go between the call that sizes the buffer and the one that fills it: the
  // whole list is asked for again with the size the SCM then says, a few times at most (no
  // resume handle: Wine does not support one, and a list read in two parts is not one reading).
  // ENUM_SERVICE_STATUS_PROCESSW holds pointers: the buffer keeps their alignment.
  std::vector<ENUM_SERVICE_STATUS_PROCESSW> buffer(kFirstBufferBytes / sizeof(buffer[0]));
  DWORD needed = 0;
  DWORD returned = 0;
  for (int attempt = 0;; ++attempt) {
    const DWORD bytes = static_cast<DWORD>(buffer.size() * sizeof(buffer[0]));
    if (::EnumServicesStatusExW(scm.get(), SC_ENUM_PROCESS_INFO, SERVICE_WIN32, SERVICE_STATE_ALL,
                                reinterpret_cast<BYTE*>(buffer.data()), bytes, &needed, &returned,
                                nullptr, nullptr) != FALSE) {
      break;
    }
    const DWORD error = ::GetLastError();
    if (error != ERROR_MORE_DATA || attempt == 4) {
      return failure("cannot list the services", error);
    }
    // Room for a few more services than asked for: one that appears meanwhile needs no retry.
    buffer.resize((bytes + needed + 4096) / sizeof(buffer[0]) + 1);
  }

  std::vector<ServiceReading> readings;
  readings.reserve(returned);
  for (DWORD i = 0; i < returned; ++i) {
    const auto& entry = buffer[i];
    const SERVICE_STATUS_PROCESS& status = entry.ServiceStatusProcess;
    const auto state = serviceStateOf(status.dwCurrentState);
    if (!state) continue;  // nothing a service can report through SetServiceStatus
    ServiceReading r;
    r.name = toUtf8(entry.lpServiceName != nullptr ? entry.lpServiceName : L"");
    r.display_name = toUtf8(entry.lpDisplayName != nullptr ? entry.lpDisplayName : L"");
    r.pid = Pid{static_cast<std::int32_t>(status.dwProcessId)};
    r.state = *state;
    r.checkpoint = status.dwCheckPoint;
    r.wait_hint = std::chrono::milliseconds(status.dwWaitHint);
    readings.push_back(std::move(r));
  }
  return readings;
}

}  // namespace wctmon::windows_platform
