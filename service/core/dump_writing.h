#pragma once

#include <filesystem>

#include "core/ports/process_dumper.h"
#include "model/incident.h"
#include "model/result.h"

namespace wctmon {

/// The diagnosis file beside a dump, for tools that read neither an ELF note nor a minidump
/// stream: PATH.json.
[[nodiscard]] std::filesystem::path sidecarOf(const std::filesystem::path& dump);

/// Writes a dump of `pid` as `request` asks (its diagnosis inside), the diagnosis beside it
/// (sidecarOf, readable by the owner only), and says what was written: its size, SHA-256 and how
/// it was taken. Nothing is left behind when it fails.
[[nodiscard]] Result<DumpRecord> writeDump(ProcessDumper& dumper, Pid pid,
                                           const DumpRequest& request);

}  // namespace wctmon
