#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "api/secret_file.h"

namespace wctmon::api {

Result<std::string> randomBytes(std::size_t count) {
  std::string bytes(count, '\0');
  std::size_t got = 0;
  while (got < count) {
    const auto n = ::getrandom(bytes.data() + got, count - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return makeError(ErrorCode::kIo, std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

Result<SecretFile> createSecretFile(const std::filesystem::path& file, std::string_view content,
                                    SecretReaders /*readers*/) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return SecretFile::kExisted;
    return makeError(ErrorCode::kIo, "cannot create it: " + std::string(std::strerror(errno)));
  }
  const bool written =
      ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  const int err = errno;
  const bool synced = written && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced) {
    ::unlink(file.c_str());
    return makeError(ErrorCode::kIo, "cannot write it: " + std::string(std::strerror(err)));
  }
  return SecretFile::kCreated;
}

}  // namespace wctmon::api
