#include <windows.h>

#include "client/terminal.h"

namespace wctmon::client {

std::optional<std::size_t> terminalWidth() {
  // A console's screen buffer: its visible window is what a row must fit. Redirected to a file
  // or a pipe, the handle is no console and the call fails.
  CONSOLE_SCREEN_BUFFER_INFO info{};
  if (::GetConsoleScreenBufferInfo(::GetStdHandle(STD_OUTPUT_HANDLE), &info) == 0) {
    return std::nullopt;
  }
  const auto columns = info.srWindow.Right - info.srWindow.Left + 1;
  return columns > 0 ? static_cast<std::size_t>(columns) : 80;
}

}  // namespace wctmon::client
