#include "platform/linux/core_wait_lookup.h"

#include <time.h>

namespace wctmon::linux_platform {

CoreWaitLookup::CoreWaitLookup(const CoreProcess& process, CoreMemory& memory, const CodeMap& code,
                               std::chrono::system_clock::time_point taken_at)
    : pid_(Pid{process.pid}),
      ppid_(process.ppid),
      memory_(memory),
      code_(code),
      age_(std::chrono::system_clock::now() - taken_at) {
  for (const auto& thread : process.threads) {
    registers_.emplace(thread.tid, parkedRegisterValues(thread.regs));
  }
}

MemoryAccess CoreWaitLookup::readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                              std::vector<FutexWindow>& out) {
  out.assign(uaddrs.size(), FutexWindow{});
  for (std::size_t i = 0; i < uaddrs.size(); ++i) {
    auto& window = out[i];
    const auto uaddr = uaddrs[i];
    // The word and what follows it, then what precedes it: a word near the edge of a segment
    // leaves the rest out, as a live read does.
    const auto after = std::span(window.bytes).subspan(kFutexWindowBefore);
    const auto n = uaddr < kFutexWindowBefore ? 0 : memory_.readAvailable(uaddr, after);
    if (n == 0) continue;
    window.valid_end = kFutexWindowBefore + n;
    const auto before = std::span(window.bytes).first(kFutexWindowBefore);
    window.valid_begin = memory_.read(uaddr - kFutexWindowBefore, before) == MemoryAccess::kOk
                             ? 0
                             : kFutexWindowBefore;
  }
  return MemoryAccess::kOk;
}

std::vector<std::uint64_t> CoreWaitLookup::parkedThreadRegisters(std::int32_t tid,
                                                                 std::uint64_t /*parked_on*/) {
  // The core holds every thread's registers as they were: no stop is needed.
  const auto it = registers_.find(tid);
  return it == registers_.end() ? std::vector<std::uint64_t>{} : it->second;
}

const PythonState* CoreWaitLookup::pythonState() {
  if (!python_) {
    const MemoryReader read = [this](std::uint64_t addr, std::span<std::byte> out) {
      return memory_.read(addr, out) == MemoryAccess::kOk;
    };
    python_.emplace(readPythonStateIfAny(code_.pythonAnchors(), read,
                                         [this](std::int32_t tid) { return hasThread(tid); }));
  }
  return *python_ ? &**python_ : nullptr;
}

std::optional<StatFields> CoreWaitLookup::processStat(Pid pid) {
  // Only the core's own process is known, and of it only its parent.
  if (pid != pid_) return std::nullopt;
  StatFields out;
  out.ppid = ppid_;
  return out;
}

std::chrono::nanoseconds CoreWaitLookup::now(clockid_t clock) {
  // The clock as it read when the core was written: now, less the core's age. Right for a core
  // of this boot; for an older one every absolute timeout has passed, which makes no deadlock.
  timespec ts{};
  ::clock_gettime(clock, &ts);
  const auto at = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec) -
                  std::chrono::duration_cast<std::chrono::nanoseconds>(age_);
  return at.count() < 0 ? std::chrono::nanoseconds(0) : at;
}

}  // namespace wctmon::linux_platform
