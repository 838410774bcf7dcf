#include <windows.h>
// These need windows.h first.
#include <bcrypt.h>
#include <sddl.h>

#include <fstream>

#include "api/secret_file.h"

namespace wctmon::api {
namespace {

std::string errorText(DWORD code) {
  wchar_t* text = nullptr;
  const DWORD n = ::FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, code, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string out;
  for (DWORD i = 0; i < n; ++i) {
    // The system's messages are ASCII in the languages Windows servers run; anything else is
    // shown as '?' rather than mis-decoded.
    const wchar_t c = text[i];
    if (c == L'\r' || c == L'\n') continue;
    out += c < 0x80 ? static_cast<char>(c) : '?';
  }
  if (text != nullptr) ::LocalFree(text);
  while (!out.empty() && (out.back() == ' ' || out.back() == '.')) out.pop_back();
  return out + " (error " + std::to_string(code) + ")";
}

}  // namespace

Result<std::string> randomBytes(std::size_t count) {
  std::string bytes(count, '\0');
  const NTSTATUS status =
      ::BCryptGenRandom(nullptr, reinterpret_cast<PUCHAR>(bytes.data()), static_cast<ULONG>(count),
                        BCRYPT_USE_SYSTEM_PREFERRED_RNG);
  if (status != 0) {
    return makeError(ErrorCode::kIo, "BCryptGenRandom failed (status " +
                                         std::to_string(static_cast<long>(status)) + ")");
  }
  return bytes;
}

Result<SecretFile> createSecretFile(const std::filesystem::path& file, std::string_view content,
                                    SecretReaders readers) {
  // Protected from inherited entries; full control for SYSTEM, Administrators and the owner;
  // read for Performance Monitor Users (S-1-5-32-558; Wine does not know its alias MU) when asked.
  const wchar_t* sddl = readers == SecretReaders::kMonitoringUsers
                            ? L"D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;OW)(A;;FR;;;S-1-5-32-558)"
                            : L"D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;OW)";
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (::ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, &descriptor,
                                                             nullptr) == FALSE) {
    return makeError(ErrorCode::kIo, "cannot make its access list: " + errorText(::GetLastError()));
  }
  SECURITY_ATTRIBUTES attributes{sizeof(attributes), descriptor, FALSE};
  HANDLE handle = ::CreateFileW(file.c_str(), GENERIC_WRITE, 0, &attributes, CREATE_NEW,
                                FILE_ATTRIBUTE_NORMAL, nullptr);
  const DWORD create_error = ::GetLastError();
  ::LocalFree(descriptor);
  if (handle == INVALID_HANDLE_VALUE) {
    if (create_error == ERROR_FILE_EXISTS) return SecretFile::kExisted;
    return makeError(ErrorCode::kIo, "cannot create it: " + errorText(create_error));
  }
  DWORD written = 0;
  const bool ok = ::WriteFile(handle, content.data(), static_cast<DWORD>(content.size()), &written,
                              nullptr) != FALSE &&
                  written == content.size() && ::FlushFileBuffers(handle) != FALSE;
  const DWORD write_error = ::GetLastError();
  ::CloseHandle(handle);
  if (!ok) {
    ::DeleteFileW(file.c_str());
    return makeError(ErrorCode::kIo, "cannot write it: " + errorText(write_error));
  }
  return SecretFile::kCreated;
}

Result<std::string> readSecretFile(const std::filesystem::path& file) {
  // The state directory's access list (SYSTEM and Administrators) keeps others from planting or
  // changing files in it; what is checked here is what the file itself is.
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(file, ec);
  if (ec) return makeError(ErrorCode::kIo, "cannot read it: " + ec.message());
  if (std::filesystem::is_symlink(status)) {
    return makeError(ErrorCode::kIo, "it is a symbolic link, not a file");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return makeError(ErrorCode::kIo, "it is not a regular file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return makeError(ErrorCode::kIo, "cannot read it");
  std::string content(kMaxSecretBytes + 1, '\0');
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got > kMaxSecretBytes) {
    return makeError(ErrorCode::kIo, "it holds more than a token (" +
                                         std::to_string(kMaxSecretBytes) + " bytes at most)");
  }
  content.resize(got);
  return content;
}

}  // namespace wctmon::api
