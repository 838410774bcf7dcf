#include "platform/windows/win_text.h"

#include <climits>
#include <memory>

namespace wctmon::windows_platform {

// Both conversions go without WC_ERR_INVALID_CHARS / MB_ERR_INVALID_CHARS: names and command
// lines come from other processes, which may hold anything, and a name with a replacement
// character is more use to the reader than no name. The lengths passed are explicit, so the
// text may hold NULs and needs no terminator.

std::string toUtf8(std::wstring_view text) {
  if (text.empty() || text.size() > static_cast<std::size_t>(INT_MAX)) return {};
  const int wide_size = static_cast<int>(text.size());
  const int size =
      ::WideCharToMultiByte(CP_UTF8, 0, text.data(), wide_size, nullptr, 0, nullptr, nullptr);
  if (size <= 0) return {};
  std::string out(static_cast<std::size_t>(size), '\0');
  ::WideCharToMultiByte(CP_UTF8, 0, text.data(), wide_size, out.data(), size, nullptr, nullptr);
  return out;
}

std::wstring toWide(std::string_view text) {
  if (text.empty() || text.size() > static_cast<std::size_t>(INT_MAX)) return {};
  const int narrow_size = static_cast<int>(text.size());
  const int size = ::MultiByteToWideChar(CP_UTF8, 0, text.data(), narrow_size, nullptr, 0);
  if (size <= 0) return {};
  std::wstring out(static_cast<std::size_t>(size), L'\0');
  ::MultiByteToWideChar(CP_UTF8, 0, text.data(), narrow_size, out.data(), size);
  return out;
}

std::string lastErrorText(DWORD code) {
  wchar_t* buffer = nullptr;
  // FORMAT_MESSAGE_IGNORE_INSERTS: messages with %1 placeholders would otherwise read arguments
  // that were never passed.
  const DWORD n = ::FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, code, 0, reinterpret_cast<wchar_t*>(&buffer), 0, nullptr);
  const std::unique_ptr<wchar_t, decltype(&::LocalFree)> owned(buffer, &::LocalFree);
  std::wstring_view message(buffer, buffer != nullptr ? n : 0);
  while (!message.empty() && (message.back() == L'\r' || message.back() == L'\n' ||
                              message.back() == L' ' || message.back() == L'.')) {
    message.remove_suffix(1);
  }
  const std::string suffix = "error " + std::to_string(code);
  if (message.empty()) return suffix;
  return toUtf8(message) + " (" + suffix + ")";
}

std::wstring_view baseName(std::wstring_view path) {
  const auto slash = path.find_last_of(L"\\/");
  return slash == std::wstring_view::npos ? path : path.substr(slash + 1);
}

void appendQuotedArgument(std::wstring& line, const std::wstring& arg) {
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

}  // namespace wctmon::windows_platform
