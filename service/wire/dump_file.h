#pragma once

#include <filesystem>
#include <string>

#include "model/result.h"

namespace wctmon::wire {

/// What a dump file says of itself.
struct DumpFileInfo {
  /// "elf-core", "minidump".
  std::string format;
  /// The diagnosis wctmon put inside (the note "WCTMON" of an ELF core, the user stream of a
  /// minidump), as it was written; empty when the dump carries none (written by another tool).
  std::string diagnosis;
};

/// Reads a dump's format and diagnosis: an ELF core (x86-64, little-endian) or a minidump. Any
/// other file, or one cut short, is an error saying so.
[[nodiscard]] Result<DumpFileInfo> readDumpFile(const std::filesystem::path& path);

}  // namespace wctmon::wire
