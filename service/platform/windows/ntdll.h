#pragma once

#include <windows.h>

namespace wctmon::windows_platform {

/// An export of a system DLL already loaded in every process (ntdll.dll, kernel32.dll) by name,
/// or nullptr. Looked up rather than linked: the export may be missing from the SDK's import
/// libraries or from older Windows, and a missing export must only cost what needs it.
template <typename Function>
[[nodiscard]] Function systemFunction(const wchar_t* module, const char* name) {
  const HMODULE loaded = ::GetModuleHandleW(module);
  if (loaded == nullptr) return nullptr;
  // Through void (*)(): the generic function pointer type, which -Wcast-function-type accepts.
  return reinterpret_cast<Function>(reinterpret_cast<void (*)()>(::GetProcAddress(loaded, name)));
}

/// An export of ntdll.dll (its native API) by name, or nullptr.
template <typename Function>
[[nodiscard]] Function ntdllFunction(const char* name) {
  return systemFunction<Function>(L"ntdll.dll", name);
}

}  // namespace wctmon::windows_platform
