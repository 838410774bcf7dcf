// /proc/PID/task/TID/syscall: "running", "-1 SP PC" or "NR ARG0..ARG5 SP PC".
#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using wctmon::linux_platform::SyscallState;
  if (const auto state = wctmon::linux_platform::parseSyscall(wctmon::fuzz::asText(data, size))) {
    WCTMON_FUZZ_CHECK(state->kind != SyscallState::Kind::kInSyscall || state->number >= 0);
  }
  return 0;
}
