// /proc/PID/maps: the executable ranges where the unwinder's stack scan looks for return
// addresses.
#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto text = wctmon::fuzz::asText(data, size);
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (const auto range = wctmon::linux_platform::parseMapsLine(text.substr(0, nl))) {
      WCTMON_FUZZ_CHECK(range->end > range->begin);
    }
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
