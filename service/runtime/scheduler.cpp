#include "runtime/scheduler_impl.h"

namespace wctmon {

template class BasicScheduler<std::chrono::steady_clock>;

}  // namespace wctmon
