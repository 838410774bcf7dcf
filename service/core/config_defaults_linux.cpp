#include "core/config.h"
#include "os/system_dirs.h"

namespace wctmon {

const PlatformDefaults& platformDefaults() {
  static const PlatformDefaults defaults{
      serviceStateDir(),
      {std::string(kDefaultApiSocket), std::string(kDefaultApiAddress)},
      AlertSinkKind::kJournald};
  return defaults;
}

}  // namespace wctmon
