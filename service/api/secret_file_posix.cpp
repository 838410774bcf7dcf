#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
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

Result<std::string> readSecretFile(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return makeError(ErrorCode::kIo, errno == ELOOP
                                         ? std::string("it is a symbolic link, not a file")
                                         : "cannot read it: " + std::string(std::strerror(errno)));
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closing{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return makeError(ErrorCode::kIo, "cannot read it: " + std::string(std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return makeError(ErrorCode::kIo, "it is not a regular file");
  if (st.st_uid != ::geteuid()) {
    return makeError(ErrorCode::kIo, "it belongs to user " + std::to_string(st.st_uid) +
                                         ", not to the service's account (" +
                                         std::to_string(::geteuid()) + ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH | S_IROTH)) != 0) {
    return makeError(ErrorCode::kIo, "its mode " + std::to_string((st.st_mode >> 6) & 7) +
                                         std::to_string((st.st_mode >> 3) & 7) +
                                         std::to_string(st.st_mode & 7) +
                                         " lets others read or change it (0600 or 0640)");
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxSecretBytes) {
    return makeError(ErrorCode::kIo, "it holds " + std::to_string(st.st_size) +
                                         " bytes, more than a token (" +
                                         std::to_string(kMaxSecretBytes) + " at most)");
  }
  std::string content(kMaxSecretBytes + 1, '\0');
  std::size_t got = 0;
  while (got < content.size()) {
    const auto n = ::read(fd, content.data() + got, content.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return makeError(ErrorCode::kIo, "cannot read it: " + std::string(std::strerror(errno)));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxSecretBytes) return makeError(ErrorCode::kIo, "it grew past a token's size");
  content.resize(got);
  return content;
}

}  // namespace wctmon::api
