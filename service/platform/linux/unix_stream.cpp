#include "platform/linux/unix_stream.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace wctmon::linux_platform {

std::optional<Error> becomeInThisThread(const Credentials& credentials, std::string_view whose) {
  if (::geteuid() == credentials.uid && ::getegid() == credentials.gid) return std::nullopt;
  if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
      ::syscall(SYS_setresgid, credentials.gid, credentials.gid, credentials.gid) != 0 ||
      ::syscall(SYS_setresuid, credentials.uid, credentials.uid, credentials.uid) != 0) {
    return makeError(ErrorCode::kAccessDenied, "cannot take " + std::string(whose) + " user " +
                                                   std::to_string(credentials.uid) + ": " +
                                                   std::strerror(errno));
  }
  return std::nullopt;
}

Result<UnixStream> UnixStream::connect(const std::string& path, std::string_view peer,
                                       Clock::time_point deadline) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return makeError(ErrorCode::kIo, "cannot make a socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "the path of " + std::string(peer) + " is too long: " + path);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  // A Unix socket connects at once or not at all.
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return makeError(ErrorCode::kIo, "cannot connect to " + std::string(peer) + " (" + path +
                                         "): " + std::strerror(errno));
  }
  return UnixStream(std::move(fd), std::string(peer), deadline);
}

int UnixStream::remaining() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

std::optional<Error> UnixStream::sendAll(std::string_view bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    pollfd p{fd_.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, remaining());
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return makeError(ErrorCode::kIo, peer_ + " did not take the request in time");
    const ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return makeError(ErrorCode::kIo, peer_ + " closed the connection");
    sent += static_cast<std::size_t>(n);
  }
  return std::nullopt;
}

Result<bool> UnixStream::receive(std::string& out) {
  std::array<char, 65536> buf{};
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining());
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return makeError(ErrorCode::kIo, peer_ + " did not answer in time");
    const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) {
      return makeError(ErrorCode::kIo,
                       "reading from " + peer_ + " failed: " + std::strerror(errno));
    }
    out.append(buf.data(), static_cast<std::size_t>(n));
    return n > 0;
  }
}

}  // namespace wctmon::linux_platform
