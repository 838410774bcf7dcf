#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/ids.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {

/// What a file descriptor of a process refers to.
struct FdTarget {
  enum class Kind { kPipe, kFifo, kSocket, kEventfd, kSignalfd, kTimerfd, kEpoll, kFile, kOther };
  Kind kind = Kind::kOther;
  std::string link;  // readlink of /proc/PID/fd/N
  dev_t dev = 0;
  ino_t inode = 0;
};

/// Reads what fd `fd` of process `pid` refers to; nullopt when it is closed or unreadable.
[[nodiscard]] std::optional<FdTarget> readFdTarget(Pid pid, int fd);

/// The file offset of fd `fd` of process `pid`, from its fdinfo.
[[nodiscard]] std::optional<std::uint64_t> fdPosition(Pid pid, int fd);

/// The inode of the socket connected to the Unix socket `inode`, from NETLINK_SOCK_DIAG;
/// nullopt when `inode` is not a connected Unix socket.
[[nodiscard]] std::optional<std::uint64_t> unixPeerInode(std::uint64_t inode);

/// The peer of Unix socket `inode` in a NETLINK_SOCK_DIAG reply (nlmsghdr, unix_diag_msg and
/// its attributes); nullopt when the reply does not name one.
[[nodiscard]] std::optional<std::uint64_t> unixPeerFromReply(std::span<const std::byte> reply,
                                                             std::uint64_t inode);

/// Answers "which processes hold this pipe, socket or file, or this lock on it".
class FdHolders {
 public:
  /// How a holder must have the file open to count.
  enum class Access { kAny, kReadable, kWritable };

  virtual ~FdHolders() = default;

  /// Processes holding the object named by `link` ("pipe:[N]", "socket:[N]", or a path whose
  /// device and inode must match).
  [[nodiscard]] virtual std::vector<Pid> holders(const FdTarget& target, Access access) = 0;

  /// Processes holding a granted lock equal to `lock` on the file `target`, from their fdinfo.
  [[nodiscard]] virtual std::vector<Pid> lockHolders(const FdTarget& target,
                                                     const LockEntry& lock) = 0;
};

/// A descriptor of a process.
struct FdEntry {
  Pid pid;
  int fd = 0;
};

/// Every descriptor of every process, by what it names (the readlink of /proc/PID/fd/N).
using FdLinks = std::unordered_map<std::string, std::vector<FdEntry>>;

/// Reads FdLinks from /proc/*/fd: a readlink per descriptor of the system.
[[nodiscard]] std::shared_ptr<const FdLinks> readFdLinks();

/// FdLinks that the samples of one moment share, read again when a second old: a ring of a
/// thousand processes waiting on each other's locks has each of its samples ask who holds a
/// file, and reading every descriptor of the system for each was most of their cost. A
/// descriptor opened since the table was read is missed until the next one (a chain ends short
/// of its holder for a moment); one closed since is not named (each is read again at use).
class SharedFdLinks {
 public:
  static constexpr std::chrono::seconds kReadAgainAfter{1};

  [[nodiscard]] std::shared_ptr<const FdLinks> get();

 private:
  std::mutex mutex_;
  std::shared_ptr<const FdLinks> links_;
  std::chrono::steady_clock::time_point read_at_{};
};

/// FdHolders from /proc/*/fd, indexed on first use and kept for one sample; from `shared` when
/// given.
class FdHolderIndex final : public FdHolders {
 public:
  explicit FdHolderIndex(SharedFdLinks* shared = nullptr) : shared_(shared) {}

  [[nodiscard]] std::vector<Pid> holders(const FdTarget& target, Access access) override;
  [[nodiscard]] std::vector<Pid> lockHolders(const FdTarget& target,
                                             const LockEntry& lock) override;

 private:
  [[nodiscard]] std::vector<FdEntry> matching(const FdTarget& target);

  SharedFdLinks* shared_;
  std::shared_ptr<const FdLinks> links_;
};

/// What a blocked flock/fcntl call asks for, as /proc/locks prints it: the kind (FLOCK, POSIX,
/// OFDLCK), the type and the absolute byte range.
struct LockRequest {
  std::string kind;
  bool write = false;
  std::uint64_t start = 0;
  std::optional<std::uint64_t> end;  // nullopt = EOF
};

/// The `struct flock` an fcntl lock call passes, as the target's memory holds it (x86-64).
struct FlockArgument {
  std::int16_t type = 0;    // F_RDLCK, F_WRLCK, F_UNLCK
  std::int16_t whence = 0;  // SEEK_SET, SEEK_CUR, SEEK_END
  std::int64_t start = 0;
  std::int64_t len = 0;
};

/// The request of `fcntl(fd, F_SETLKW or F_OFD_SETLKW, &lock)`: `position` is the descriptor's
/// file offset (for SEEK_CUR), `size` the file's size (for SEEK_END). nullopt when the range is
/// invalid (the kernel would have refused it).
[[nodiscard]] std::optional<LockRequest> fcntlLockRequest(bool ofd, const FlockArgument& lock,
                                                          std::uint64_t position,
                                                          std::uint64_t size);

/// The request of `flock(fd, operation)`.
[[nodiscard]] LockRequest flockRequest(int operation);

/// Resolves a blocked flock/fcntl lock request to the processes that hold the conflicting lock.
struct FileLockWait {
  std::string name;    // "path [start-end]"
  std::string detail;  // "POSIX WRITE lock held by ..."
  std::vector<Pid> holders;
  bool found = false;  // the request was found in /proc/locks
};

/// Finds the blocked request of process `pid` on `target` in /proc/locks and its holders. A
/// waiter is matched by what it asks for (kind, type, range) as well as by its pid: OFD waiters
/// all carry pid -1, and threads of one process may wait on different ranges of one file. Without
/// `request` (its memory was not readable) the first waiter of the process on the file is taken.
[[nodiscard]] FileLockWait resolveFileLockWait(Pid pid, const FdTarget& target,
                                               const std::optional<LockRequest>& request,
                                               const std::vector<LockEntry>& locks,
                                               FdHolders& index);

}  // namespace wctmon::linux_platform
