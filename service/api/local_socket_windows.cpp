#include "api/local_socket.h"

namespace wctmon::api {

// gRPC's Windows transport is TCP: the API listens on loopback there.
bool localSocketsSupported() { return false; }

bool socketAnswers(const std::filesystem::path& /*path*/) { return false; }

void restrictSocket(const std::filesystem::path& /*path*/) {}

}  // namespace wctmon::api
