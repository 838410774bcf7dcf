#include <sys/stat.h>
#include <unistd.h>

#include "client/token_files.h"

namespace wctmon::client {

bool publishedByTrustedOwner(const std::filesystem::path& published,
                             const std::filesystem::path& socket) {
  struct stat file {};
  struct stat sock {};
  if (::lstat(published.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) return false;
  // Another user's file could name this user's token files and have them sent to that user's
  // socket: only root (the service) or this user, and only a file no one else may change.
  if (file.st_uid != 0 && file.st_uid != ::geteuid()) return false;
  if ((file.st_mode & (S_IWGRP | S_IWOTH)) != 0) return false;
  // A socket put in the place of the service's by someone else is not the service's.
  return ::lstat(socket.c_str(), &sock) == 0 && S_ISSOCK(sock.st_mode) &&
         sock.st_uid == file.st_uid;
}

}  // namespace wctmon::client
