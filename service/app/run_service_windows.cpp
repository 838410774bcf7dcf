#include <windows.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "app/run_service.h"
#include "platform/windows/win_text.h"

namespace wctmon::app {

int runService(std::vector<std::string> args) {
  std::wstring self(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetModuleFileNameW(nullptr, self.data(), static_cast<DWORD>(self.size()));
    if (n < self.size()) {
      self.resize(n);
      break;
    }
    self.resize(self.size() * 2);
  }
  const auto service = std::filesystem::path(self).parent_path() / L"wctmond.exe";
  std::wstring line;
  windows_platform::appendQuotedArgument(line, service.wstring());
  for (const auto& a : args)
    windows_platform::appendQuotedArgument(line, windows_platform::toWide(a));
  STARTUPINFOW startup{};
  startup.cb = sizeof(startup);
  PROCESS_INFORMATION child{};
  if (::CreateProcessW(service.c_str(), line.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr,
                       &startup, &child) == FALSE) {
    std::cerr << "wctmon: cannot start " << service.string() << " (error " << ::GetLastError()
              << ")\n";
    return 1;
  }
  // Ctrl+C reaches the service in the same console, which stops; this one waits for it.
  ::SetConsoleCtrlHandler(nullptr, TRUE);
  ::WaitForSingleObject(child.hProcess, INFINITE);
  DWORD code = 1;
  ::GetExitCodeProcess(child.hProcess, &code);
  ::CloseHandle(child.hThread);
  ::CloseHandle(child.hProcess);
  return static_cast<int>(code);
}

const char* privilegeHint() {
  return "run as an administrator, whose SeDebugPrivilege opens other users' processes";
}

}  // namespace wctmon::app
