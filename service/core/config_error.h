// One problem found in a configuration or in a target given as JSON: where, as a JSON pointer,
// and why.
#pragma once

#include <filesystem>
#include <string>

namespace wctmon {

/// One problem in a configuration: where (a JSON pointer) and why.
struct ConfigError {
  std::string pointer;
  std::string reason;
  /// The file itself could not be read: `reason` names it and gives the system's reason, and no
  /// pointer applies.
  bool unreadable = false;

  [[nodiscard]] std::string toString() const {
    if (unreadable) return reason;
    return (pointer.empty() ? "/" : pointer) + ": " + reason;
  }
  /// One line about this error of `file`: "FILE: /pointer: reason", or the I/O error alone (it
  /// names the file already).
  [[nodiscard]] std::string describe(const std::filesystem::path& file) const {
    return unreadable ? reason : file.string() + ": " + toString();
  }
};

}  // namespace wctmon
