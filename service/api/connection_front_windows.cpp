#include "api/connection_front.h"

namespace wctmon::api {

// gRPC takes connections from a descriptor on POSIX systems only: on Windows it listens itself.

bool ConnectionFront::supported() { return false; }

Result<std::unique_ptr<ConnectionFront>> ConnectionFront::listen(
    const std::vector<ListenAddress>& /*addresses*/) {
  return makeError(ErrorCode::kUnsupported,
                   "the API's own listeners need gRPC connections from descriptors, which "
                   "Windows has not");
}

}  // namespace wctmon::api
