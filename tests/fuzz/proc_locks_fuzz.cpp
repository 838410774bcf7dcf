// /proc/locks: every file lock of the system and who waits for it.
#include <algorithm>

#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = wctmon::fuzz::asText(data, size);
  const auto locks = wctmon::linux_platform::parseLocks(text);
  WCTMON_FUZZ_CHECK(locks.size() <=
                    static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  for (const auto& lock : locks) {
    WCTMON_FUZZ_CHECK(!lock.end || *lock.end >= lock.start);
  }
  return 0;
}
