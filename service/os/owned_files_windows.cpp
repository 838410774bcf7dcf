#include <io.h>
#include <windows.h>

#include "os/owned_files.h"

namespace wctmon {
namespace {

// Who may write in the state directory is its access list's business, set when the service is
// configured (service_config.cpp: SYSTEM and Administrators only, not inherited). What is checked
// here is what a name can hide: a link or junction in place of a directory or a file, and a file
// with another name (a hard link) elsewhere.

std::string errorText(const char* what, DWORD error) {
  return std::string(what) + " (error " + std::to_string(error) + ")";
}

/// The attributes of `path` itself, a link not followed; the reason when there is none.
std::string attributesOf(const std::filesystem::path& path, DWORD& attributes) {
  attributes = ::GetFileAttributesW(path.c_str());
  if (attributes == INVALID_FILE_ATTRIBUTES)
    return errorText("it cannot be read", ::GetLastError());
  return {};
}

std::string checkDirectory(const std::filesystem::path& dir) {
  DWORD attributes = 0;
  if (auto why = attributesOf(dir, attributes); !why.empty()) return why;
  if ((attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0) {
    return "it is a link or a junction: name the directory itself";
  }
  if ((attributes & FILE_ATTRIBUTE_DIRECTORY) == 0) return "it is not a directory";
  return {};
}

std::optional<FileIdentity> identityOf(HANDLE handle, BY_HANDLE_FILE_INFORMATION& info) {
  if (::GetFileInformationByHandle(handle, &info) == FALSE) return std::nullopt;
  return FileIdentity{info.dwVolumeSerialNumber,
                      (static_cast<std::uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow};
}

std::string checkFile(const std::filesystem::path& file, bool create,
                      std::optional<FileIdentity>& identity) {
  // FILE_FLAG_OPEN_REPARSE_POINT: a link at the name is opened as itself, not followed.
  HANDLE handle = ::CreateFileW(file.c_str(), FILE_READ_ATTRIBUTES,
                                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                create ? OPEN_ALWAYS : OPEN_EXISTING,
                                FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (handle == INVALID_HANDLE_VALUE) {
    const DWORD error = ::GetLastError();
    if (!create && (error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND)) return {};
    return errorText("it cannot be opened", error);
  }
  BY_HANDLE_FILE_INFORMATION info{};
  const auto found = identityOf(handle, info);
  ::CloseHandle(handle);
  if (!found) return "it cannot be read";
  if ((info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0) {
    return "it is a link: it is not followed";
  }
  if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0) return "it is not a regular file";
  if (info.nNumberOfLinks > 1) {
    return "it has " + std::to_string(info.nNumberOfLinks) +
           " names (hard links): it may be another file than the service's";
  }
  identity = found;
  return {};
}

}  // namespace

std::string prepareOwnedDirectory(const std::filesystem::path& dir, unsigned /*mode*/,
                                  std::optional<unsigned> /*group*/) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "it cannot be made: " + ec.message();
  return checkDirectory(dir);
}

std::string checkOwnedDirectory(const std::filesystem::path& dir) { return checkDirectory(dir); }

OwnedFile prepareOwnedFile(const std::filesystem::path& file, unsigned /*mode*/) {
  OwnedFile owned;
  owned.why_not = checkFile(file, true, owned.identity);
  if (!owned.why_not.empty()) owned.identity.reset();
  return owned;
}

std::string checkOwnedFile(const std::filesystem::path& file, unsigned /*mode*/) {
  std::optional<FileIdentity> ignored;
  return checkFile(file, false, ignored);
}

std::optional<FileIdentity> openFileIdentity(int fd) {
  const auto handle = reinterpret_cast<HANDLE>(::_get_osfhandle(fd));
  if (handle == INVALID_HANDLE_VALUE) return std::nullopt;
  BY_HANDLE_FILE_INFORMATION info{};
  return identityOf(handle, info);
}

}  // namespace wctmon
