#include <windows.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "app/run_service.h"

namespace wctmon::app {
namespace {

std::wstring widen(const std::string& text) {
  if (text.empty()) return {};
  const int n =
      ::MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0);
  std::wstring out(static_cast<std::size_t>(n), L'\0');
  ::MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), out.data(), n);
  return out;
}

/// One argument quoted as CommandLineToArgvW reads it back: backslashes are literal except
/// before a quote, where they are doubled.
void appendQuoted(std::wstring& line, const std::wstring& arg) {
  if (!line.empty()) line += L' ';
  if (!arg.empty() && arg.find_first_of(L" \t\n\v\"") == std::wstring::npos) {
    line += arg;
    return;
  }
  line += L'"';
  std::size_t backslashes = 0;
  for (const wchar_t c : arg) {
    if (c == L'\\') {
      ++backslashes;
      continue;
    }
    line.append(c == L'"' ? backslashes * 2 + 1 : backslashes, L'\\');
    backslashes = 0;
    line += c;
  }
  line.append(backslashes * 2, L'\\');
  line += L'"';
}

}  // namespace

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
  appendQuoted(line, service.wstring());
  for (const auto& a : args) appendQuoted(line, widen(a));
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
