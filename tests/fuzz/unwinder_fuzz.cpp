// The unwinder on a stack copy whose every byte the target controls: its registers and the
// words of its stack (return addresses, saved frame pointers, garbage), unwound with this
// process's own modules so that CFI is found. Values picked by the input are made to point into
// this program's code, where the unwinder and the stack scan look hardest.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "fuzz/fuzz_input.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/stack_unwinder.h"

namespace wctmon::linux_platform {
namespace {

/// The executable range of this program that holds its own code.
MapsRange ownCode() {
  const auto here = reinterpret_cast<std::uint64_t>(&LLVMFuzzerTestOneInput);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto range = parseMapsLine(line);
    if (range && range->executable && range->begin <= here && here < range->end) return *range;
  }
  fuzz::fail("this program's code is not in /proc/self/maps", __FILE__, __LINE__);
}

/// A value from the input, or, as often, an address in this program's code.
std::uint64_t valueOrCode(fuzz::FuzzInput& in, const MapsRange& code) {
  const bool into_code = in.flag();
  const auto v = in.take<std::uint64_t>();
  return into_code ? code.begin + v % (code.end - code.begin) : v;
}

}  // namespace
}  // namespace wctmon::linux_platform

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon;
  using namespace wctmon::linux_platform;
  static const MapsRange code = ownCode();
  fuzz::FuzzInput in(data, size);
  StackCopy copy;
  copy.known = in.take<std::uint32_t>() & StackCopy::kAllRegisters;
  const bool scan = in.flag();
  for (auto& reg : copy.regs) reg = valueOrCode(in, code);
  // The copy sits where the input says, or at a stack address of this thread's.
  std::uint64_t local = 0;
  copy.sp = in.flag() ? in.take<std::uint64_t>() : reinterpret_cast<std::uint64_t>(&local);
  const std::size_t words = in.below(512);
  for (std::size_t i = 0; i < words && !in.empty(); ++i) {
    const auto word = valueOrCode(in, code);
    const auto* bytes = reinterpret_cast<const std::byte*>(&word);
    copy.bytes.insert(copy.bytes.end(), bytes, bytes + sizeof(word));
  }
  const Pid self{static_cast<std::int32_t>(::getpid())};
  const Tid thread{static_cast<std::int32_t>(::syscall(SYS_gettid))};
  const auto unwound = unwindStack(self, thread, copy, {.max_frames = 64, .scan = scan});
  WCTMON_FUZZ_CHECK(unwound.frames.size() <= 64);
  return 0;
}
