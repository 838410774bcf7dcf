// /proc/PID/task/TID/schedstat: "RUN_NS WAIT_NS TIMESLICES", the third being how often the
// thread was scheduled in.
#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static_cast<void>(wctmon::linux_platform::parseSchedstatRuns(wctmon::fuzz::asText(data, size)));
  return 0;
}
