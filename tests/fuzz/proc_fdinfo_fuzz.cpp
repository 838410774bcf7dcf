// /proc/PID/fdinfo/N: the open flags, the offset and the "lock:" lines of a descriptor.
#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon::linux_platform;
  auto text = wctmon::fuzz::asText(data, size);
  static_cast<void>(parseFdinfoFlags(text));
  static_cast<void>(parseFdinfoPos(text));
  while (!text.empty()) {
    const auto nl = text.find('\n');
    static_cast<void>(parseLockLine(text.substr(0, nl)));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
