#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/ids.h"
#include "platform/linux/glibc_sync.h"

namespace wctmon::linux_platform {

/// Outcome of reading another process's memory.
enum class MemoryAccess { kOk, kDenied, kGone, kFault };

/// Reads the windows around every futex word in `uaddrs` with as few process_vm_readv calls as
/// the mappings allow. Never stops the target.
[[nodiscard]] MemoryAccess readFutexWindows(Pid pid, std::span<const std::uint64_t> uaddrs,
                                            std::vector<FutexWindow>& out);

/// Reads `size` bytes at `addr` of process `pid`.
[[nodiscard]] MemoryAccess readMemory(Pid pid, std::uint64_t addr, std::span<std::byte> out);

}  // namespace wctmon::linux_platform
