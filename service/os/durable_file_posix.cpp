#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "os/durable_file.h"

namespace wctmon {

void syncFile(const std::filesystem::path& file) {
  if (const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void syncDirectory(const std::filesystem::path& dir) {
  if (const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::error_code linkNoReplace(const std::filesystem::path& from, const std::filesystem::path& to) {
  // link() rather than rename(): a file that appeared meanwhile is kept, never replaced.
  int error = ::link(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  if (error == EPERM || error == EOPNOTSUPP) {  // a file system without hard links
    error = ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  }
  return {error, std::generic_category()};
}

}  // namespace wctmon
