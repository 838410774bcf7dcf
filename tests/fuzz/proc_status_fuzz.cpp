// /proc/PID/status and /proc/PID/task/TID/status: the fields wctmon reads, anywhere in the text.
#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = wctmon::fuzz::asText(data, size);
  for (const char* key : {"Tgid", "Pid", "PPid", "TracerPid", "Threads", "NSpid"}) {
    static_cast<void>(wctmon::linux_platform::parseStatusField(text, key));
  }
  static_cast<void>(wctmon::linux_platform::parseInt(text));
  return 0;
}
