// /proc/PID/task/TID/sched: the scheduler clock when the thread last ran (se.exec_start).
#include <cmath>

#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = wctmon::fuzz::asText(data, size);
  if (const auto ms = wctmon::linux_platform::parseSchedExecStart(text)) {
    // Compared with other readings to tell whether a thread ran: never NaN or infinite.
    WCTMON_FUZZ_CHECK(std::isfinite(*ms) && *ms >= 0);
  }
  return 0;
}
