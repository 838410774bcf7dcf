#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "store/held_file.h"

namespace wctmon {

std::unique_ptr<HeldFile> HeldFile::open(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  return std::unique_ptr<HeldFile>(new HeldFile(file, fd));
}

HeldFile::~HeldFile() {
  // Closed only once SQLite's connection to the same file is closed (its owner releases that
  // first): closing any descriptor of a file drops every POSIX lock this process holds on it.
  ::close(static_cast<int>(handle_));
}

std::string HeldFile::whyNotAtItsPath() const {
  struct stat held {};
  if (::fstat(static_cast<int>(handle_), &held) != 0) return {};  // cannot tell: assume it is
  struct stat named {};
  const bool named_now = ::stat(file_.c_str(), &named) == 0;
  // No name left: deleted (or renamed over), even when a file of the same inode number has since
  // been made there.
  if (held.st_nlink == 0) return named_now ? "another file took its place" : "it was deleted";
  if (!named_now) {
    const int error = errno;
    if (error == ENOENT) return "it was moved away";
    return {};  // a path that cannot be looked at now (EACCES, EIO): not a reason to replace it
  }
  if (named.st_dev != held.st_dev || named.st_ino != held.st_ino) {
    return "another file took its place";
  }
  return {};
}

}  // namespace wctmon
