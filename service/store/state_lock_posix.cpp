#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "store/state_lock.h"

namespace wctmon {
namespace {

/// The pid the holder wrote, or "unknown" (a holder still starting has written nothing yet).
std::string holderOf(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string pid(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

Result<std::unique_ptr<StateLock>> StateLock::acquire(const std::filesystem::path& dir) {
  const auto path = dir / kStateLockFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int error = errno;
    const bool unwritable = error == EACCES || error == EPERM || error == EROFS;
    return makeError(ErrorCode::kIo,
                     (unwritable ? "the state directory " + dir.string() +
                                       " is not writable by the service: cannot create "
                                 : std::string("cannot open the lock file ")) +
                         path.string() + ": " + std::strerror(error));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string message = error == EWOULDBLOCK
                              ? "the state directory " + dir.string() +
                                    " is in use by another wctmon service (pid " + holderOf(fd) +
                                    "; lock " + path.string() + "): one service per state directory"
                              : "cannot lock " + path.string() + ": " + std::strerror(error);
    ::close(fd);
    return makeError(error == EWOULDBLOCK ? ErrorCode::kBusy : ErrorCode::kIo, std::move(message));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  const bool recorded = ::ftruncate(fd, 0) == 0 &&
                        ::pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  static_cast<void>(recorded);  // without it the lock holds; the next error says "unknown"
  return std::unique_ptr<StateLock>(new StateLock(fd));
}

StateLock::~StateLock() { ::close(static_cast<int>(handle_)); }

}  // namespace wctmon
