#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "api/local_socket.h"

namespace wctmon::api {

bool localSocketsSupported() { return true; }

bool socketAnswers(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const auto text = path.string();
  std::copy_n(text.c_str(), std::min(text.size() + 1, sizeof(address.sun_path)), address.sun_path);
  const bool answers =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return answers;
}

namespace {

Error systemError(const std::string& what, const std::filesystem::path& path) {
  return makeError(errno == EPERM || errno == EACCES ? ErrorCode::kAccessDenied : ErrorCode::kIo,
                   "cannot " + what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

std::optional<LocalGroup> findLocalGroup(const std::string& name) {
  if (name.empty()) return std::nullopt;
  group entry{};
  group* found = nullptr;
  // Large /etc/group lines (a group of many members) need more than the usual buffer.
  std::vector<char> buffer(16 * 1024);
  int err = 0;
  while ((err = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found)) ==
             ERANGE &&
         buffer.size() < (1u << 20)) {
    buffer.resize(buffer.size() * 2);
  }
  if (err != 0 || found == nullptr) return std::nullopt;
  return LocalGroup{name, static_cast<unsigned>(found->gr_gid)};
}

Status restrictSocket(const std::filesystem::path& path, const std::optional<LocalGroup>& group) {
  // Through a descriptor of the socket itself, looked at without following a link: a link or a
  // hard link to another file put at its name meanwhile is refused, never given the socket's mode.
  const int fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return systemError("open", path);
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closing{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return systemError("read", path);
  if (!S_ISSOCK(st.st_mode)) {
    return makeError(ErrorCode::kAccessDenied,
                     "the API socket " + path.string() + " was replaced by another file");
  }
  // The group first: until the mode is set the socket has the umask's (0700 under the unit's
  // UMask=0077), which lets nobody else in meanwhile.
  if (group && ::fchownat(fd, "", static_cast<uid_t>(-1), static_cast<gid_t>(group->id),
                          AT_EMPTY_PATH) != 0) {
    return systemError("give to group " + group->name + " the API socket", path);
  }
  // fchmod does not take a descriptor opened O_PATH; its name under /proc/self/fd is that file.
  const auto by_descriptor = "/proc/self/fd/" + std::to_string(fd);
  if (::chmod(by_descriptor.c_str(), 0660) != 0) {
    return systemError("set the mode of the API socket", path);
  }
  return std::monostate{};
}

Status shareWithGroup(const std::filesystem::path& file, const LocalGroup& group) {
  // Through a descriptor of the file itself: a symbolic link put in its place is not followed.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return systemError("open", file);
  const bool shared = ::fchown(fd, static_cast<uid_t>(-1), static_cast<gid_t>(group.id)) == 0 &&
                      ::fchmod(fd, 0640) == 0;
  const int err = errno;
  ::close(fd);
  if (!shared) {
    errno = err;
    return systemError("give to group " + group.name + " the file", file);
  }
  return std::monostate{};
}

}  // namespace wctmon::api
