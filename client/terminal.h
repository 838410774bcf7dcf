#pragma once

#include <cstddef>
#include <optional>

namespace wctmon::client {

/// The width of the terminal that standard output is, in columns; nothing when standard output
/// is no terminal (a pipe, a file): then tables are not cut at all. One implementation per
/// platform (terminal_posix.cpp, terminal_windows.cpp).
[[nodiscard]] std::optional<std::size_t> terminalWidth();

}  // namespace wctmon::client
