#include "app/service_signals.h"

namespace wctmon::app {

void holdServiceSignals() {}

void releaseServiceSignals() {}

}  // namespace wctmon::app
