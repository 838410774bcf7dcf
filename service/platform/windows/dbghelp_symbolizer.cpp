#include "platform/windows/dbghelp_symbolizer.h"

#include <windows.h>
// dbghelp.h and psapi.h need windows.h first.
#include <cxxabi.h>
#include <dbghelp.h>
#include <psapi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

constexpr ULONG kMaxSymbolName = 1024;

/// GCC's C++ names (mingw's DWARF and COFF symbols are Itanium-mangled; SYMOPT_UNDNAME only
/// knows Microsoft's decoration) in readable form; other names as they are.
std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

}  // namespace

SymbolSession::SymbolSession(HANDLE process) : process_(process) {
  // Line numbers are loaded: frames carry their source position. Deferred loads read a
  // module's symbols only when an address falls in it. No prompts or error boxes: this is a
  // service.
  // The 32-bit modules of a WOW64 process are listed too: without them its code has no module.
  ::SymSetOptions(SYMOPT_UNDNAME | SYMOPT_DEFERRED_LOADS | SYMOPT_LOAD_LINES | SYMOPT_NO_PROMPTS |
                  SYMOPT_FAIL_CRITICAL_ERRORS | SYMOPT_INCLUDE_32BIT_MODULES);
  ok_ = ::SymInitializeW(process, nullptr, TRUE) != FALSE;
  if (!ok_) error_ = lastErrorText(::GetLastError());
}

SymbolSession::~SymbolSession() {
  if (ok_) ::SymCleanup(process_);
}

StackFrame Symbolizer::frameAt(DWORD64 pc, bool activation) {
  StackFrame frame;
  frame.pc = pc;
  const DWORD64 lookup = activation ? pc : pc - 1;
  const DWORD64 base = moduleBase(lookup);
  frame.module = moduleName(lookup, base);
  // SYMBOL_INFOW ends in a one-character name; the name's room follows it.
  std::vector<std::uint64_t> storage(
      (sizeof(SYMBOL_INFOW) + kMaxSymbolName * sizeof(wchar_t)) / sizeof(std::uint64_t) + 1);
  auto* symbol = reinterpret_cast<SYMBOL_INFOW*>(storage.data());
  symbol->SizeOfStruct = sizeof(SYMBOL_INFOW);
  symbol->MaxNameLen = kMaxSymbolName;
  DWORD64 displacement = 0;
  if (::SymFromAddrW(process_, lookup, &displacement, symbol) != FALSE) {
    const ULONG length = std::min(symbol->NameLen, kMaxSymbolName - 1);
    frame.function = demangle(toUtf8(std::wstring_view(symbol->Name, length)));
    frame.offset = pc - symbol->Address;
    IMAGEHLP_LINEW64 line{};
    line.SizeOfStruct = sizeof(line);
    DWORD line_displacement = 0;
    if (::SymGetLineFromAddrW64(process_, lookup, &line_displacement, &line) != FALSE &&
        line.FileName != nullptr) {
      frame.file = toUtf8(line.FileName);
      frame.line = line.LineNumber;
    }
  } else if (base != 0) {
    auto table = exports_.find(base);
    if (table == exports_.end()) {
      table = exports_.emplace(base, ExportTable::read(process_, base)).first;
    }
    if (const auto* entry = table->second.covering(lookup)) {
      frame.function = entry->second;
      frame.offset = pc - entry->first;
    }
  }
  return frame;
}

DWORD64 Symbolizer::moduleBase(DWORD64 address) const {
  return ::SymGetModuleBase64(process_, address);
}

std::string Symbolizer::moduleName(DWORD64 address, DWORD64 base) {
  IMAGEHLP_MODULEW64 module{};
  module.SizeOfStruct = sizeof(module);
  if (::SymGetModuleInfoW64(process_, address, &module) != FALSE && module.ImageName[0] != L'\0') {
    return toUtf8(baseName(module.ImageName));
  }
  if (base == 0) return {};
  std::wstring path(MAX_PATH * 4, L'\0');
  const DWORD n =
      ::GetModuleFileNameExW(process_, reinterpret_cast<HMODULE>(static_cast<std::uintptr_t>(base)),
                             path.data(), static_cast<DWORD>(path.size()));
  path.resize(n);
  return toUtf8(baseName(path));
}

}  // namespace wctmon::windows_platform
