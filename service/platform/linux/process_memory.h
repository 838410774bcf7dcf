#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/ids.h"
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

/// Reads up to `out.size()` bytes at `addr` of process `pid`, page by page: the bytes before the
/// first page that cannot be read (the end of a stack). Returns how many were read.
[[nodiscard]] std::size_t readAvailable(Pid pid, std::uint64_t addr, std::span<std::byte> out);

/// readAvailable of many places at once (`outs[i]` from `addrs[i]`), in as few system calls as
/// the kernel allows; how many bytes of each were read.
[[nodiscard]] std::vector<std::size_t> readAvailableBatch(
    Pid pid, std::span<const std::uint64_t> addrs, std::span<const std::span<std::byte>> outs);

/// Reads the NUL-terminated string at `addr` of process `pid`, at most `max` bytes; nullopt
/// when it cannot be read or has no end within `max`.
[[nodiscard]] std::optional<std::string> readString(Pid pid, std::uint64_t addr,
                                                    std::size_t max = 4096);

}  // namespace wctmon::linux_platform
