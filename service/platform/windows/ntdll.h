#pragma once

#include <windows.h>

namespace wctmon::windows_platform {

/// An export of ntdll.dll by name, or nullptr. Looked up rather than linked: ntdll's native API
/// is not in the SDK's import libraries everywhere, and a missing export must only cost what
/// needs it.
template <typename Function>
[[nodiscard]] Function ntdllFunction(const char* name) {
  const HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  if (ntdll == nullptr) return nullptr;
  // Through void (*)(): the generic function pointer type, which -Wcast-function-type accepts.
  return reinterpret_cast<Function>(reinterpret_cast<void (*)()>(::GetProcAddress(ntdll, name)));
}

}  // namespace wctmon::windows_platform
