#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>

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

void restrictSocket(const std::filesystem::path& path) { ::chmod(path.c_str(), 0660); }

}  // namespace wctmon::api
