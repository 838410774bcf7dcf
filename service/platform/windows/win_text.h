#pragma once

#include <windows.h>

#include <string>
#include <string_view>

namespace wctmon::windows_platform {

/// UTF-16 text from a W API as UTF-8; unpaired surrogates become U+FFFD.
[[nodiscard]] std::string toUtf8(std::wstring_view text);

/// UTF-8 text as UTF-16 for a W API; ill-formed sequences become U+FFFD.
[[nodiscard]] std::wstring toWide(std::string_view text);

/// The system's message for an error code (GetLastError()), on one line without the trailing
/// period and line break, followed by the code: "Access is denied (error 5)".
[[nodiscard]] std::string lastErrorText(DWORD code);

/// Appends `arg` to a command line, after a space unless the line is empty, quoted as
/// CommandLineToArgvW reads it back: backslashes are literal except before a quote, where they
/// are doubled.
void appendQuotedArgument(std::wstring& line, const std::wstring& arg);

/// The last component of a Windows path ("C:\\Windows\\System32\\ntdll.dll" -> "ntdll.dll").
[[nodiscard]] std::wstring_view baseName(std::wstring_view path);

}  // namespace wctmon::windows_platform
