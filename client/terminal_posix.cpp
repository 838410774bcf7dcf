#include <sys/ioctl.h>
#include <unistd.h>

#include "client/terminal.h"

namespace wctmon::client {

std::optional<std::size_t> terminalWidth() {
  if (::isatty(STDOUT_FILENO) == 0) return std::nullopt;
  winsize size{};
  // A terminal that does not say its size (a serial line) is taken as the classic 80 columns.
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_col == 0) return 80;
  return size.ws_col;
}

}  // namespace wctmon::client
