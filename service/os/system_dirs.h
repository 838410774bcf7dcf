#pragma once

#include <filesystem>

namespace wctmon {

// Where the system keeps what a service owns, one implementation per platform, chosen by CMake
// (system_dirs_posix.cpp, system_dirs_windows.cpp).

/// The directory of the service's state: /var/lib/wctmon; %ProgramData%\wctmon, where
/// ProgramData is the shell's known folder (the MSI's CommonAppDataFolder), not the environment's
/// variable, which a service does not always have as users do (Wine gives its services another).
[[nodiscard]] std::filesystem::path serviceStateDir();

/// Whether standard error is systemd's journal (a service's stream connected by systemd, as
/// $JOURNAL_STREAM names it): its lines then take a "<N>" syslog priority prefix and need no
/// timestamp of their own. Never on Windows.
[[nodiscard]] bool stderrIsJournal();

}  // namespace wctmon
