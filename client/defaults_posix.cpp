#include "client/defaults.h"

namespace wctmon::client {

const Defaults& defaults() {
  static const Defaults d{"/run/wctmon/api.sock", "127.0.0.1:7787", "/var/lib/wctmon",
                          "root or a member of group wctmon"};
  return d;
}

}  // namespace wctmon::client
