#include "platform/windows/window_prober.h"

#include <algorithm>
#include <string>
#include <utility>

#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

/// A top-level window found by EnumWindows, before it is probed.
struct Found {
  HWND window = nullptr;
  DWORD pid = 0;
  DWORD tid = 0;
};

struct Search {
  std::span<const Pid> pids;
  std::vector<Found> found;
};

BOOL CALLBACK collect(HWND window, LPARAM context) {
  auto& search = *reinterpret_cast<Search*>(context);
  DWORD pid = 0;
  const DWORD tid = ::GetWindowThreadProcessId(window, &pid);
  if (tid == 0) return TRUE;  // destroyed meanwhile
  const Pid owner{static_cast<std::int32_t>(pid)};
  // Hidden windows (message-only helpers, windows not shown yet) have no user waiting on them.
  if (std::find(search.pids.begin(), search.pids.end(), owner) != search.pids.end() &&
      ::IsWindowVisible(window) != FALSE) {
    search.found.push_back({window, pid, tid});
  }
  return TRUE;
}

/// The caption without sending WM_GETTEXT: asking a hung window for its text would hang too.
std::string titleOf(HWND window) {
  std::wstring text(512, L'\0');
  const int n = ::InternalGetWindowText(window, text.data(), static_cast<int>(text.size()));
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return toUtf8(text);
}

}  // namespace

WindowsWindowProber::WindowsWindowProber(std::chrono::milliseconds timeout)
    : timeout_ms_(static_cast<UINT>(std::max<std::chrono::milliseconds::rep>(timeout.count(), 1))) {
  // Looked up rather than linked: it was documented late and a system may lack it; the probe by
  // message alone judges the same windows, only slower.
  if (const HMODULE user32 = ::GetModuleHandleW(L"user32.dll"); user32 != nullptr) {
    is_hung_ = reinterpret_cast<IsHungAppWindowFn>(
        reinterpret_cast<void*>(::GetProcAddress(user32, "IsHungAppWindow")));
  }
}

std::optional<bool> WindowsWindowProber::responding(HWND window) const {
  if (is_hung_ != nullptr && is_hung_(window) != FALSE) return false;
  DWORD_PTR result = 0;
  // SMTO_BLOCK: this thread has no window, nothing to pump meanwhile. SMTO_ABORTIFHUNG: a thread
  // the system already judges hung fails at once instead of costing the whole timeout.
  if (::SendMessageTimeoutW(window, WM_NULL, 0, 0, SMTO_ABORTIFHUNG | SMTO_BLOCK, timeout_ms_,
                            &result) != 0) {
    return true;
  }
  if (::IsWindow(window) == FALSE) return std::nullopt;
  return false;
}

Result<std::vector<WindowReading>> WindowsWindowProber::windowsOf(std::span<const Pid> pids) {
  if (pids.empty()) return std::vector<WindowReading>{};
  Search search{pids, {}};
  // EnumWindows may return FALSE without an error code (Windows documents no failure case, and
  // the callback never stops it early): only an error code set by this call fails the reading.
  ::SetLastError(ERROR_SUCCESS);
  if (::EnumWindows(collect, reinterpret_cast<LPARAM>(&search)) == FALSE) {
    const DWORD error = ::GetLastError();
    if (error != ERROR_SUCCESS) {
      return makeError(ErrorCode::kIo, "cannot list the windows: " + lastErrorText(error));
    }
  }
  std::vector<WindowReading> readings;
  readings.reserve(search.found.size());
  for (const auto& f : search.found) {
    const auto answered = responding(f.window);
    if (!answered) continue;
    WindowReading r;
    r.handle = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(f.window));
    r.pid = Pid{static_cast<std::int32_t>(f.pid)};
    r.tid = Tid{static_cast<std::int32_t>(f.tid)};
    r.title = titleOf(f.window);
    r.responding = *answered;
    readings.push_back(std::move(r));
  }
  return readings;
}

}  // namespace wctmon::windows_platform
