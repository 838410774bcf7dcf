#pragma once

// The named exports of a PE module loaded in another process, read from that process's memory:
// the name of last resort for an address DbgHelp cannot name (dbghelp_stack_walker.cpp).

#include <windows.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wctmon::windows_platform {

/// The named exports of one module, read from the target's memory, by address.
class ExportTable {
 public:
  /// Reads the export directory of the module loaded at `base`; empty when it has none or it
  /// cannot be read.
  [[nodiscard]] static ExportTable read(HANDLE process, std::uint64_t base);

  /// The export that starts at most kNearBytes before `address`, or nullptr.
  [[nodiscard]] const std::pair<std::uint64_t, std::string>* covering(std::uint64_t address) const;

 private:
  static constexpr std::size_t kMaxExportBytes = 16 * 1024 * 1024;
  /// How far past an export's start an address may be and still be named by it: only small
  /// stubs, such as system-call thunks, are named this way.
  static constexpr std::uint64_t kNearBytes = 64;

  std::vector<std::pair<std::uint64_t, std::string>> entries_;
};

}  // namespace wctmon::windows_platform
