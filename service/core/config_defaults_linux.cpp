#include "core/config.h"

namespace wctmon {

const PlatformDefaults& platformDefaults() {
  static const PlatformDefaults defaults{
      "/var/lib/wctmon",
      {std::string(kDefaultApiSocket), std::string(kDefaultApiAddress)},
      AlertSinkKind::kJournald};
  return defaults;
}

}  // namespace wctmon
