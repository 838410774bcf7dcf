#pragma once

// Shell completion scripts written from the same CLI11 tables as --help: the commands at each
// level, the options each takes (those it inherits included), the words an option or a
// positional accepts (oneOf), file names where a value is a FILE or a PATH.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wctmon::cli {

enum class Shell { kBash, kZsh, kFish, kPowerShell };

/// The shells completionScript writes for, as they are named on the command line.
[[nodiscard]] std::vector<std::string> shellNames();
/// "bash", "zsh", "fish", "powershell"; nothing for another word.
[[nodiscard]] std::optional<Shell> shellNamed(std::string_view name);

/// The completion script of `app` (called `program`) for `shell`: self-contained, it asks the
/// program nothing. Hidden commands are left out.
[[nodiscard]] std::string completionScript(const CLI::App& app, const std::string& program,
                                           Shell shell);

}  // namespace wctmon::cli
