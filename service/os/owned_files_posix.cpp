#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "os/owned_files.h"
#include "os/unique_fd.h"

namespace wctmon {
namespace {

constexpr unsigned kPermissionBits = 07777;

std::string octal(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", mode & kPermissionBits);
  return text;
}

std::string errnoText(std::string_view what) {
  return std::string(what) + ": " + std::strerror(errno);
}

/// Why a file or directory found there is not one the service may trust: another user's (root
/// excepted when `root_may_own`), or one others may write.
std::string whyNotTrusted(const struct stat& st, bool root_may_own) {
  const uid_t self = ::geteuid();
  if (st.st_uid != self && !(root_may_own && st.st_uid == 0)) {
    return "it belongs to user " + std::to_string(st.st_uid) + ", not to the service's account (" +
           std::to_string(self) + ")" + (root_may_own ? " or root" : "");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return "its mode " + octal(st.st_mode) +
           " lets other users write in it: take that away (chmod go-w)";
  }
  return {};
}

/// Opens the directory `dir` without following a link at its name; the reason when it cannot.
std::string openDirectory(const std::filesystem::path& dir, UniqueFd& fd) {
  fd.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.valid()) return {};
  if (errno == ELOOP || errno == ENOTDIR) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return "it is a symbolic link: name the directory itself";
    }
    return "it is not a directory";
  }
  return errnoText("it cannot be opened");
}

/// Takes away what `mode` does not allow from `fd`, the account's own: the bits beyond it.
std::string narrow(int fd, const struct stat& st, unsigned mode) {
  const unsigned now = st.st_mode & kPermissionBits;
  if ((now & ~mode) == 0 || st.st_uid != ::geteuid()) return {};
  if (::fchmod(fd, now & mode) != 0)
    return errnoText("its mode " + octal(now) + " cannot be narrowed");
  return {};
}

std::string checkFile(const std::filesystem::path& file, unsigned mode, bool create,
                      std::optional<FileIdentity>& identity) {
  if (create) {
    // Made here, with no link followed, with `mode` less the umask.
    UniqueFd made(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (made.valid()) {
      struct stat st {};
      if (::fstat(made.get(), &st) != 0) return errnoText("it cannot be read");
      identity = FileIdentity{static_cast<std::uint64_t>(st.st_dev),
                              static_cast<std::uint64_t>(st.st_ino)};
      return {};
    }
    if (errno != EEXIST) return errnoText("it cannot be made");
  }
  // Looked at without opening it for reading or writing: a device or a pipe put there does not
  // learn it was opened.
  UniqueFd path(::open(file.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path.valid()) {
    if (errno == ENOENT && !create) return {};
    return errnoText("it cannot be opened");
  }
  struct stat st {};
  if (::fstat(path.get(), &st) != 0) return errnoText("it cannot be read");
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link: it is not followed";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (st.st_nlink > 1) {
    return "it has " + std::to_string(st.st_nlink) +
           " names (hard links): it may be another file than the service's";
  }
  // Root's is trusted as the directory is (root may write anything anyway): a store's log left by
  // root reading it (wctmon incidents) while the service was stopped must not keep it down.
  if (auto why = whyNotTrusted(st, true); !why.empty()) return why;
  if ((st.st_mode & kPermissionBits & ~mode) != 0) {
    UniqueFd open_file(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat again {};
    if (!open_file.valid() || ::fstat(open_file.get(), &again) != 0 || again.st_ino != st.st_ino ||
        again.st_dev != st.st_dev) {
      return "it changed while it was checked";
    }
    if (auto why = narrow(open_file.get(), again, mode); !why.empty()) return why;
  }
  identity =
      FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  return {};
}

}  // namespace

std::string prepareOwnedDirectory(const std::filesystem::path& dir, unsigned mode,
                                  std::optional<unsigned> group) {
  std::error_code ec;
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
  if (ec) return "its parent cannot be made: " + ec.message();
  const bool made = ::mkdir(dir.c_str(), mode) == 0;
  if (!made && errno != EEXIST) return errnoText("it cannot be made");
  UniqueFd fd;
  if (auto why = openDirectory(dir, fd); !why.empty()) return why;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errnoText("it cannot be read");
  if (!made) {
    if (auto why = whyNotTrusted(st, true); !why.empty()) return why;
  }
  if (st.st_uid != ::geteuid()) return {};
  // An account that may not give it to the group (not one of its members) keeps it to itself:
  // `mode`'s group bits would let in the directory's group, which is another.
  if (group && st.st_gid != *group && ::fchown(fd.get(), static_cast<uid_t>(-1), *group) != 0) {
    mode &= 0700;
  }
  // mkdir's mode passed through the umask: the one asked for is the one meant.
  if (made)
    return ::fchmod(fd.get(), mode) == 0 ? std::string() : errnoText("its mode cannot be set");
  return narrow(fd.get(), st, mode);
}

std::string checkOwnedDirectory(const std::filesystem::path& dir) {
  UniqueFd fd;
  if (auto why = openDirectory(dir, fd); !why.empty()) return why;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errnoText("it cannot be read");
  return whyNotTrusted(st, true);
}

OwnedFile prepareOwnedFile(const std::filesystem::path& file, unsigned mode) {
  OwnedFile owned;
  owned.why_not = checkFile(file, mode, true, owned.identity);
  if (!owned.why_not.empty()) owned.identity.reset();
  return owned;
}

std::string checkOwnedFile(const std::filesystem::path& file, unsigned mode) {
  std::optional<FileIdentity> ignored;
  return checkFile(file, mode, false, ignored);
}

std::optional<FileIdentity> openFileIdentity(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

}  // namespace wctmon
