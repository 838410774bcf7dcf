#pragma once

// Names addresses of another process with DbgHelp (SymFromAddrW, line numbers), the module's
// export table as a last resort: what the stack walker names its frames with and the hot-spot
// sampler its samples. DbgHelp is not thread-safe: everything here runs under dbgHelpMutex().

#include <windows.h>

#include <cstdint>
#include <map>
#include <string>

#include "model/wait_model.h"
#include "platform/windows/pe_export_table.h"

namespace wctmon::windows_platform {

/// DbgHelp's view of one process's modules and symbols, from SymInitializeW to SymCleanup:
/// deferred loads (a module's symbols are read when an address falls in it), line numbers, no
/// prompts. Made and used only under dbgHelpMutex().
class SymbolSession {
 public:
  explicit SymbolSession(HANDLE process);
  ~SymbolSession();
  SymbolSession(const SymbolSession&) = delete;
  SymbolSession& operator=(const SymbolSession&) = delete;

  /// SymInitializeW succeeded; when not, error() is GetLastError()'s text.
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  HANDLE process_;
  bool ok_ = false;
  std::string error_;
};

/// Names the addresses of one process through DbgHelp (within a SymbolSession), with the
/// process's export tables as a last resort. Wine's DbgHelp gives an export it has no other
/// information for a size of one byte, so an address inside a small stub without unwind data
/// (ntdll's system-call thunks, where every blocked thread stands) has no name there; a nearby
/// export is the name Windows's DbgHelp would give without symbols.
class Symbolizer {
 public:
  explicit Symbolizer(HANDLE process) : process_(process) {}

  /// A frame at `pc`, with its module (the file name) and function, or without a function where
  /// neither the symbols nor the exports name it. A return address (every frame but the
  /// innermost: not an `activation`) points after the call: the call itself is looked up.
  [[nodiscard]] StackFrame frameAt(DWORD64 pc, bool activation);

  /// The base address of the module that holds `address`; 0 when none does.
  [[nodiscard]] DWORD64 moduleBase(DWORD64 address) const;

 private:
  std::string moduleName(DWORD64 address, DWORD64 base);

  HANDLE process_;
  std::map<DWORD64, ExportTable> exports_;
};

}  // namespace wctmon::windows_platform
