// /proc/PID/task/TID/stat: its command name is any 15 bytes a thread gives itself, spaces and
// parentheses included.
#include <string>

#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = wctmon::fuzz::asText(data, size);
  if (const auto stat = wctmon::linux_platform::parseStat(text)) {
    WCTMON_FUZZ_CHECK(stat->comm.size() <= text.size());
  }
  if (const auto cpu = wctmon::linux_platform::parseStatProcessor(text)) {
    WCTMON_FUZZ_CHECK(*cpu >= 0 && text.find(std::to_string(*cpu)) != std::string_view::npos);
  }
  return 0;
}
