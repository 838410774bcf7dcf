#pragma once

#include "core/ports/process_dumper.h"

namespace wctmon::windows_platform {

/// The ProcessDumper of Windows: DbgHelp's MiniDumpWriteDump of the process, with its thread
/// information, handle data, unloaded modules and the memory its stacks reference (all of it on
/// request), and the diagnosis as a user stream of type kDumpDiagnosisType. DbgHelp suspends the
/// process's threads while it writes and resumes them before it returns.
class MinidumpWriter final : public ProcessDumper {
 public:
  [[nodiscard]] Result<DumpWritten> dump(Pid pid, const DumpRequest& request) override;
  [[nodiscard]] std::string_view extension() const override { return ".dmp"; }
};

}  // namespace wctmon::windows_platform
