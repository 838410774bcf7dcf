#include "os/system_dirs.h"

namespace wctmon {

std::filesystem::path serviceStateDir() { return "/var/lib/wctmon"; }

}  // namespace wctmon
