#pragma once

#include <string>
#include <vector>

namespace wctmon::app {

/// Runs the service binary (wctmond) next to this program with `args`, as `wctmon run` and
/// `wctmon incidents` do: on POSIX by exec, keeping the pid, the foreground and the signals; on
/// Windows as a child in the same console whose exit code is returned. This command-line tool
/// thus does not carry the service's libraries (their loading alone would slow every `analyze`).
/// Returns only when the service could not be started (POSIX) or has ended (Windows).
[[nodiscard]] int runService(std::vector<std::string> args);

/// How to give this tool the right to read other processes' waits, for an error message.
[[nodiscard]] const char* privilegeHint();

}  // namespace wctmon::app
