#include "core/config.h"
#include "os/system_dirs.h"

namespace wctmon {

const PlatformDefaults& platformDefaults() {
  // Read once. The API on loopback only: the service's local clients and dashboards reach it
  // there. Alerts go to the Event Log.
  static const PlatformDefaults defaults{
      serviceStateDir(), {std::string(kDefaultApiAddress)}, AlertSinkKind::kEventLog};
  return defaults;
}

}  // namespace wctmon
