// What a thread blocked on one of its descriptors waits for: a file lock's holders (flock,
// fcntl), the other end of a pipe or of a connected Unix socket, a FIFO's other end to be
// opened, or an eventfd, signalfd or timerfd that nobody owns.
#pragma once

#include <cstdint>
#include <string>

#include "model/ids.h"
#include "model/snapshot.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// A read (`reading`) or a write on descriptor `fd` of the process: a pipe's or a FIFO's
/// holders of the other end, a connected Unix socket's peer's holders, or a descriptor nobody
/// owns.
[[nodiscard]] WaitObject descriptorWait(WaitLookup& lookup, int fd, bool reading);

/// `flock(fd, operation)` by process `pid`: the processes that hold the conflicting lock.
[[nodiscard]] WaitObject flockWait(Pid pid, WaitLookup& lookup, int fd, int operation);

/// `fcntl(fd, F_SETLKW or F_OFD_SETLKW (`ofd`), lock)` by process `pid`, the `struct flock` at
/// `lock_addr` of its memory: the processes that hold the conflicting lock.
[[nodiscard]] WaitObject fcntlLockWait(Pid pid, WaitLookup& lookup, int fd, bool ofd,
                                       std::uint64_t lock_addr);

/// A thread blocked in open() of the path at `path_addr` (relative to `dirfd`): a FIFO waits
/// there for its other end to be opened; anything else (a device, a network file system) is a
/// wait wctmon does not model.
[[nodiscard]] WaitObject openWait(WaitLookup& lookup, int dirfd, std::uint64_t path_addr,
                                  int flags);

/// What descriptor `fd` refers to, as readlink says ("socket:[123]"), or "fd N".
[[nodiscard]] std::string descriptorName(WaitLookup& lookup, int fd);

}  // namespace wctmon::linux_platform
