#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wctmon::wire {

/// `text` safe to write to a terminal: every string from the server may hold bytes a monitored
/// process chose (thread names, command lines), so control characters (C0, DEL, C1), Unicode
/// bidirectional controls and ill-formed UTF-8 come out visible and inert: "\x1b", "\u009b",
/// "\u202e", "\xff". Newlines stay when `keep_newlines`; everything else is unchanged.
[[nodiscard]] std::string terminalSafe(std::string_view text, bool keep_newlines = true);

/// Columns that terminal-safe `text` takes: one per character.
[[nodiscard]] std::size_t displayWidth(std::string_view text);

/// The first `width` columns of terminal-safe `text`, ending in "…" when it had to be cut.
[[nodiscard]] std::string fitWidth(std::string_view text, std::size_t width);

}  // namespace wctmon::wire
