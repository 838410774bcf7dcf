#include "api/local_socket.h"

namespace wctmon::api {

// gRPC's Windows transport is TCP: the API listens on loopback there.
bool localSocketsSupported() { return false; }

bool socketAnswers(const std::filesystem::path& /*path*/) { return false; }

// Readers of the token are the members of Performance Monitor Users, named in its ACL when it is
// made (secret_file_windows.cpp): there is no group to look up or give files to.
std::optional<LocalGroup> findLocalGroup(const std::string& /*name*/) { return std::nullopt; }

Status restrictSocket(const std::filesystem::path& /*path*/,
                      const std::optional<LocalGroup>& /*group*/) {
  return std::monostate{};
}

Status shareWithGroup(const std::filesystem::path& /*file*/, const LocalGroup& /*group*/) {
  return std::monostate{};
}

}  // namespace wctmon::api
