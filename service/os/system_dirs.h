#pragma once

#include <filesystem>

namespace wctmon {

// Where the system keeps what a service owns, one implementation per platform, chosen by CMake
// (system_dirs_posix.cpp, system_dirs_windows.cpp).

/// The directory of the service's state: /var/lib/wctmon; %ProgramData%\wctmon, where
/// ProgramData is the shell's known folder (the MSI's CommonAppDataFolder), not the environment's
/// variable, which a service does not always have as users do (Wine gives its services another).
[[nodiscard]] std::filesystem::path serviceStateDir();

}  // namespace wctmon
