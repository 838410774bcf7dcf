#pragma once

#include <windows.h>

#include <chrono>
#include <optional>

#include "core/ports/window_prober.h"

namespace wctmon::windows_platform {

/// Probes the top-level visible windows of processes (EnumWindows) the way ProcDump -h does:
/// IsHungAppWindow first when user32 has it (looked up at run time: on Windows it reads when
/// the thread last took a message, without sending one), then WM_NULL by SendMessageTimeoutW
/// with SMTO_ABORTIFHUNG | SMTO_BLOCK, answered within `timeout` or not. Windows probes one
/// window after another: a window whose thread is silent but not yet judged hung by the system
/// costs `timeout`, one judged hung nothing. It sees the windows of its own desktop only: a
/// service in session 0 does not see an interactive session's.
class WindowsWindowProber final : public WindowProber {
 public:
  /// How long a window's thread may take to answer WM_NULL by default.
  static constexpr std::chrono::milliseconds kDefaultTimeout{1000};

  explicit WindowsWindowProber(std::chrono::milliseconds timeout = kDefaultTimeout);

  [[nodiscard]] Result<std::vector<WindowReading>> windowsOf(std::span<const Pid> pids) override;

 private:
  /// Whether the window's thread answered; nullopt when the window is gone.
  [[nodiscard]] std::optional<bool> responding(HWND window) const;

  using IsHungAppWindowFn = BOOL(WINAPI*)(HWND);

  UINT timeout_ms_;
  /// user32's IsHungAppWindow, or null when this system lacks it.
  IsHungAppWindowFn is_hung_ = nullptr;
};

}  // namespace wctmon::windows_platform
