// Waits on a descriptor: file locks (flock, fcntl) resolved through /proc/locks to the
// processes that hold them, pipes and connected Unix sockets to the holders of the other end,
// FIFOs being opened, and the descriptors nobody owns (eventfd, signalfd, timerfd, devices).
#include "platform/linux/descriptor_waits.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <optional>

#include "platform/linux/fd_resolver.h"
#include "platform/linux/wait_classifier_internal.h"

namespace wctmon::linux_platform {
namespace {

/// What `fcntl(fd, cmd, lock)` asks for, from the `struct flock` in the target's memory.
std::optional<LockRequest> fcntlRequest(WaitLookup& lookup, int fd, bool ofd,
                                        std::uint64_t lock_addr) {
  struct {
    std::int16_t type;
    std::int16_t whence;
    std::int64_t start;
    std::int64_t len;
    std::int32_t pid;
  } raw{};
  static_assert(sizeof(raw) == 32, "struct flock of x86-64");
  std::array<std::byte, sizeof(raw)> bytes{};
  if (lookup.readMemory(lock_addr, bytes) != MemoryAccess::kOk) return std::nullopt;
  std::memcpy(&raw, bytes.data(), sizeof(raw));
  std::uint64_t position = 0;
  std::uint64_t size = 0;
  if (raw.whence == SEEK_CUR) position = lookup.fdPosition(fd).value_or(0);
  if (raw.whence == SEEK_END) size = lookup.fileSize(fd).value_or(0);
  return fcntlLockRequest(ofd, FlockArgument{raw.type, raw.whence, raw.start, raw.len}, position,
                          size);
}

WaitObject fileLockWait(Pid pid, WaitLookup& lookup, int fd,
                        const std::optional<LockRequest>& request) {
  WaitObject w;
  w.type = ObjectType::kFileLock;
  auto target = lookup.fdTarget(fd);
  if (!target) {
    w.status = ObjectStatus::kError;
    w.name = "fd " + std::to_string(fd);
    return w;
  }
  w.key = target->inode;
  auto resolved = resolveFileLockWait(pid, *target, request, lookup.locks(), lookup.fdHolders());
  w.name = resolved.name;
  w.detail = resolved.found ? resolved.detail : "the blocked request is not in /proc/locks";
  w.owner_processes = std::move(resolved.holders);
  w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
  return w;
}

}  // namespace

WaitObject flockWait(Pid pid, WaitLookup& lookup, int fd, int operation) {
  return fileLockWait(pid, lookup, fd, flockRequest(operation));
}

WaitObject fcntlLockWait(Pid pid, WaitLookup& lookup, int fd, bool ofd, std::uint64_t lock_addr) {
  return fileLockWait(pid, lookup, fd, fcntlRequest(lookup, fd, ofd, lock_addr));
}

WaitObject openWait(WaitLookup& lookup, int dirfd, std::uint64_t path_addr, int flags) {
  auto path = lookup.readString(path_addr);
  if (!path) {
    return noOwner(ObjectType::kUnknown, "open", "blocked in open(); the path is not readable");
  }
  const auto inode = lookup.fifoInode(dirfd, *path);
  if (!inode) return noOwner(ObjectType::kUnknown, *path, "blocked in open()");
  const bool reading = (flags & O_ACCMODE) == O_RDONLY;
  auto w = noOwner(ObjectType::kFifoOpen, *path,
                   reading ? "opening a FIFO for reading: waits until a writer opens it"
                           : "opening a FIFO for writing: waits until a reader opens it");
  w.key = *inode;
  return w;
}

std::string descriptorName(WaitLookup& lookup, int fd) {
  auto target = lookup.fdTarget(fd);
  return target ? target->link : "fd " + std::to_string(fd);
}

WaitObject descriptorWait(WaitLookup& lookup, int fd, bool reading) {
  auto target = lookup.fdTarget(fd);
  if (!target) {
    auto w = noOwner(ObjectType::kUnknown, "fd " + std::to_string(fd), "descriptor not readable");
    w.status = ObjectStatus::kError;
    return w;
  }
  using Kind = FdTarget::Kind;
  using Access = FdHolders::Access;
  switch (target->kind) {
    case Kind::kPipe:
    case Kind::kFifo: {
      WaitObject w;
      w.type = ObjectType::kPipe;
      w.name = target->link;
      w.key = target->inode;
      // A reader waits for whoever can write, a writer for whoever can read.
      w.owner_processes =
          lookup.fdHolders().holders(*target, reading ? Access::kWritable : Access::kReadable);
      w.detail = reading ? "read on an empty pipe; the holders of its write end can end it"
                         : "write to a full pipe; the holders of its read end can end it";
      w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
      return w;
    }
    case Kind::kSocket: {
      const auto peer = lookup.unixPeer(target->inode);
      if (!peer) {
        return noOwner(ObjectType::kSocketIo, target->link,
                       reading ? "receive on a socket" : "send on a socket");
      }
      WaitObject w;
      w.type = ObjectType::kUnixSocket;
      w.key = target->inode;
      FdTarget peer_target;
      peer_target.kind = Kind::kSocket;
      peer_target.link = "socket:[" + std::to_string(*peer) + "]";
      w.name = target->link + " <-> " + peer_target.link;
      w.owner_processes = lookup.fdHolders().holders(peer_target, Access::kAny);
      w.detail = reading ? "receive on a connected Unix socket; the peer's holders can end it"
                         : "send on a full Unix socket; the peer's holders can end it";
      w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
      return w;
    }
    case Kind::kEventfd:
      return noOwner(ObjectType::kEventfd, target->link, "eventfd: any holder may signal it");
    case Kind::kSignalfd:
      return noOwner(ObjectType::kSignalWait, target->link, "waiting for a signal");
    case Kind::kTimerfd:
      return noOwner(ObjectType::kSleep, target->link, "waiting for a timer");
    default:
      return noOwner(ObjectType::kUnknown, target->link, reading ? "read" : "write");
  }
}

}  // namespace wctmon::linux_platform
