#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/result.h"

namespace wctmon {

/// One top-level visible window and whether its thread answered a message.
struct WindowReading {
  /// The window's handle as a number (an HWND's value), stable while the window lives.
  std::uint64_t handle = 0;
  /// The process and the thread that own it: the thread whose message loop answers it.
  Pid pid;
  Tid tid;
  /// Its caption, UTF-8; empty when it has none.
  std::string title;
  /// The thread answered within the prober's timeout (or the system did not judge it hung).
  bool responding = true;

  friend bool operator==(const WindowReading&, const WindowReading&) = default;
};

/// Finds the windows of processes and asks each whether its thread still pumps messages.
class WindowProber {
 public:
  virtual ~WindowProber() = default;
  /// The top-level visible windows of `pids`, each probed once; a pid with no window (or gone)
  /// contributes nothing. An error when windows cannot be listed at all.
  [[nodiscard]] virtual Result<std::vector<WindowReading>> windowsOf(std::span<const Pid> pids) = 0;
};

}  // namespace wctmon
