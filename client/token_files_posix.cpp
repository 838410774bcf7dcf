#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "client/token_files.h"

namespace wctmon::client {

namespace {

/// The account the packaged service runs as (the systemd unit's User=), when there is one.
bool isServiceAccount(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  std::array<char, 4096> buf{};
  return ::getpwnam_r("wctmon", &entry, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
         found->pw_uid == uid;
}

}  // namespace

bool publishedByTrustedOwner(const std::filesystem::path& published,
                             const std::filesystem::path& socket) {
  struct stat file {};
  struct stat sock {};
  if (::lstat(published.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) return false;
  // Another user's file could name this user's token files and have them sent to that user's
  // socket: only the service's (root, or the package's account wctmon) or this user's, and only
  // a file no one else may change.
  if (file.st_uid != 0 && file.st_uid != ::geteuid() && !isServiceAccount(file.st_uid)) {
    return false;
  }
  if ((file.st_mode & (S_IWGRP | S_IWOTH)) != 0) return false;
  // A socket put in the place of the service's by someone else is not the service's.
  return ::lstat(socket.c_str(), &sock) == 0 && S_ISSOCK(sock.st_mode) &&
         sock.st_uid == file.st_uid;
}

}  // namespace wctmon::client
