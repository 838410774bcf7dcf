#include "platform/linux/fd_resolver.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "os/unique_fd.h"

namespace wctmon::linux_platform {
namespace {

std::optional<std::string> readLink(const std::string& path) {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
  if (n < 0) return std::nullopt;
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

std::string fdPath(Pid pid, int fd, const char* dir = "fd") {
  return "/proc/" + std::to_string(pid.value) + "/" + dir + "/" + std::to_string(fd);
}

/// Reads fdinfo of one descriptor and hands its text to `parse`.
template <typename Parse>
auto readFdinfo(Pid pid, int fd, Parse parse) -> decltype(parse(std::string_view())) {
  std::array<char, 4096> buf{};
  const auto path = fdPath(pid, fd, "fdinfo");
  const long n = readSmallFile(AT_FDCWD, path.c_str(), buf);
  if (n <= 0) return std::nullopt;
  return parse(std::string_view(buf.data(), static_cast<std::size_t>(n)));
}

std::optional<unsigned> accessMode(Pid pid, int fd) {
  const auto flags = readFdinfo(pid, fd, parseFdinfoFlags);
  if (!flags) return std::nullopt;
  return *flags & O_ACCMODE;
}

bool sameLock(const LockEntry& a, const LockEntry& b) {
  return a.kind == b.kind && a.write == b.write && a.inode == b.inode && a.start == b.start &&
         a.end == b.end && a.dev_major == b.dev_major && a.dev_minor == b.dev_minor;
}

std::string describeRange(const LockEntry& lock) {
  return "[" + std::to_string(lock.start) + "-" +
         (lock.end ? std::to_string(*lock.end) : std::string("EOF")) + "]";
}

}  // namespace

std::optional<std::uint64_t> fdPosition(Pid pid, int fd) {
  return readFdinfo(pid, fd, parseFdinfoPos);
}

std::optional<FdTarget> readFdTarget(Pid pid, int fd) {
  const auto path = fdPath(pid, fd);
  auto link = readLink(path);
  if (!link) return std::nullopt;
  FdTarget t;
  t.link = *link;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    t.dev = st.st_dev;
    t.inode = st.st_ino;
  }
  if (t.link.starts_with("pipe:[")) {
    t.kind = FdTarget::Kind::kPipe;
  } else if (t.link.starts_with("socket:[")) {
    t.kind = FdTarget::Kind::kSocket;
  } else if (t.link == "anon_inode:[eventfd]") {
    t.kind = FdTarget::Kind::kEventfd;
  } else if (t.link == "anon_inode:[signalfd]") {
    t.kind = FdTarget::Kind::kSignalfd;
  } else if (t.link == "anon_inode:[timerfd]") {
    t.kind = FdTarget::Kind::kTimerfd;
  } else if (t.link == "anon_inode:[eventpoll]") {
    t.kind = FdTarget::Kind::kEpoll;
  } else if (t.link.starts_with("/")) {
    t.kind = S_ISFIFO(st.st_mode) ? FdTarget::Kind::kFifo : FdTarget::Kind::kFile;
  }
  return t;
}

std::optional<std::uint64_t> unixPeerInode(std::uint64_t inode) {
  UniqueFd sock(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!sock.valid()) return std::nullopt;
  struct {
    nlmsghdr header;
    unix_diag_req request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0U;
  message.request.udiag_ino = static_cast<std::uint32_t>(inode);
  message.request.udiag_show = UDIAG_SHOW_PEER;
  // A lookup of one socket must carry the "no cookie" value.
  message.request.udiag_cookie[0] = ~0U;
  message.request.udiag_cookie[1] = ~0U;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(sock.get(), &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
    return std::nullopt;
  }
  std::array<std::byte, 8192> buf{};
  const ssize_t n = ::recv(sock.get(), buf.data(), buf.size(), 0);
  if (n <= 0) return std::nullopt;
  return unixPeerFromReply(std::span(buf).first(static_cast<std::size_t>(n)), inode);
}

std::optional<std::uint64_t> unixPeerFromReply(std::span<const std::byte> reply,
                                               std::uint64_t inode) {
  // Walks the reply by hand: the NLMSG_*/RTA_* macros are C casts.
  constexpr auto align4 = [](std::size_t v) { return (v + 3U) & ~std::size_t{3}; };
  std::size_t offset = 0;
  const std::size_t total = reply.size();
  while (offset + sizeof(nlmsghdr) <= total) {
    nlmsghdr header{};
    std::memcpy(&header, reply.data() + offset, sizeof(header));
    if (header.nlmsg_len < sizeof(header) || header.nlmsg_len > total - offset ||
        header.nlmsg_type != SOCK_DIAG_BY_FAMILY) {
      return std::nullopt;
    }
    const std::size_t body = offset + align4(sizeof(nlmsghdr));
    const std::size_t end = offset + header.nlmsg_len;
    unix_diag_msg msg{};
    if (body + sizeof(msg) <= end) {
      std::memcpy(&msg, reply.data() + body, sizeof(msg));
    }
    if (body + sizeof(msg) <= end && msg.udiag_ino == inode) {
      std::size_t attr = body + align4(sizeof(unix_diag_msg));
      while (attr + sizeof(nlattr) <= end) {
        nlattr a{};
        std::memcpy(&a, reply.data() + attr, sizeof(a));
        if (a.nla_len < sizeof(nlattr) || a.nla_len > end - attr) break;
        if (a.nla_type == UNIX_DIAG_PEER && a.nla_len >= sizeof(nlattr) + sizeof(std::uint32_t)) {
          std::uint32_t peer = 0;
          std::memcpy(&peer, reply.data() + attr + align4(sizeof(nlattr)), sizeof(peer));
          if (peer != 0) return peer;
        }
        attr += align4(a.nla_len);
      }
    }
    offset += align4(header.nlmsg_len);
  }
  return std::nullopt;
}

std::shared_ptr<const FdLinks> readFdLinks() {
  auto links = std::make_shared<FdLinks>();
  UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* dir = proc.valid() ? ::fdopendir(::dup(proc.get())) : nullptr;
  if (dir == nullptr) return links;
  while (const dirent* entry = ::readdir(dir)) {
    auto pid = parseInt(entry->d_name);
    if (!pid) continue;
    const std::string fd_dir = "/proc/" + std::string(entry->d_name) + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // exited, or not ours to read
    while (const dirent* fd_entry = ::readdir(fds)) {
      auto fd = parseInt(fd_entry->d_name);
      if (!fd) continue;
      auto link = readLink(fd_dir + "/" + fd_entry->d_name);
      if (!link) continue;
      (*links)[*link].push_back(
          FdEntry{Pid{static_cast<std::int32_t>(*pid)}, static_cast<int>(*fd)});
    }
    ::closedir(fds);
  }
  ::closedir(dir);
  return links;
}

std::shared_ptr<const FdLinks> SharedFdLinks::get() {
  // Held while the table is read: a sample that comes meanwhile waits for it, not reads another.
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (links_ == nullptr || now - read_at_ >= kReadAgainAfter) {
    links_ = readFdLinks();
    read_at_ = std::chrono::steady_clock::now();
  }
  return links_;
}

std::vector<FdEntry> FdHolderIndex::matching(const FdTarget& target) {
  if (links_ == nullptr) links_ = shared_ != nullptr ? shared_->get() : readFdLinks();
  std::vector<FdEntry> out;
  auto it = links_->find(target.link);
  if (it == links_->end()) return out;
  const bool by_inode =
      target.kind == FdTarget::Kind::kFifo || target.kind == FdTarget::Kind::kFile;
  for (const auto& e : it->second) {
    if (by_inode) {
      // A path names the same file only within one mount namespace: confirm by device and inode.
      struct stat st {};
      if (::stat(fdPath(e.pid, e.fd).c_str(), &st) != 0 || st.st_dev != target.dev ||
          st.st_ino != target.inode) {
        continue;
      }
    } else if (readLink(fdPath(e.pid, e.fd)) != target.link) {
      continue;  // closed since the table was read (its number may name something else now)
    }
    out.push_back(e);
  }
  return out;
}

std::vector<Pid> FdHolderIndex::holders(const FdTarget& target, Access access) {
  std::vector<Pid> out;
  for (const auto& e : matching(target)) {
    if (access != Access::kAny) {
      const auto mode = accessMode(e.pid, e.fd);
      if (!mode) continue;
      const bool readable = *mode == O_RDONLY || *mode == O_RDWR;
      const bool writable = *mode == O_WRONLY || *mode == O_RDWR;
      if ((access == Access::kReadable && !readable) ||
          (access == Access::kWritable && !writable)) {
        continue;
      }
    }
    if (std::find(out.begin(), out.end(), e.pid) == out.end()) out.push_back(e.pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Pid> FdHolderIndex::lockHolders(const FdTarget& target, const LockEntry& lock) {
  std::vector<Pid> out;
  for (const auto& e : matching(target)) {
    std::array<char, 16384> buf{};
    const long n = readSmallFile(AT_FDCWD, fdPath(e.pid, e.fd, "fdinfo").c_str(), buf);
    if (n <= 0) continue;
    std::string_view text(buf.data(), static_cast<std::size_t>(n));
    while (!text.empty()) {
      const auto nl = text.find('\n');
      auto line = text.substr(0, nl);
      if (line.starts_with("lock:")) {
        auto held = parseLockLine(line);
        if (held && !held->waiter && sameLock(*held, lock) &&
            std::find(out.begin(), out.end(), e.pid) == out.end()) {
          out.push_back(e.pid);
        }
      }
      if (nl == std::string_view::npos) break;
      text.remove_prefix(nl + 1);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<LockRequest> fcntlLockRequest(bool ofd, const FlockArgument& lock,
                                            std::uint64_t position, std::uint64_t size) {
  LockRequest out;
  out.kind = ofd ? "OFDLCK" : "POSIX";
  out.write = lock.type == F_WRLCK;
  std::int64_t base = 0;
  switch (lock.whence) {
    case SEEK_SET:
      break;
    case SEEK_CUR:
      base = static_cast<std::int64_t>(position);
      break;
    case SEEK_END:
      base = static_cast<std::int64_t>(size);
      break;
    default:
      return std::nullopt;
  }
  // As the kernel's flock64_to_posix_lock: a negative length reaches back from the start. The
  // values come from the target's memory: anything that overflows is no request it could make.
  std::int64_t start = 0;
  if (__builtin_add_overflow(base, lock.start, &start) || start < 0) return std::nullopt;
  if (lock.len > 0) {
    std::int64_t end = 0;
    if (__builtin_add_overflow(start, lock.len - 1, &end)) return std::nullopt;
    out.end = static_cast<std::uint64_t>(end);
  } else if (lock.len < 0) {
    out.end = static_cast<std::uint64_t>(start - 1);
    start += lock.len;  // no overflow: start >= 0 > len
    if (start < 0) return std::nullopt;
  }
  out.start = static_cast<std::uint64_t>(start);
  return out;
}

LockRequest flockRequest(int operation) {
  LockRequest out;
  out.kind = "FLOCK";
  out.write = (operation & LOCK_EX) != 0;
  return out;
}

FileLockWait resolveFileLockWait(Pid pid, const FdTarget& target,
                                 const std::optional<LockRequest>& request,
                                 const std::vector<LockEntry>& locks, FdHolders& index) {
  FileLockWait out;
  out.name = target.link;
  const auto dev_major = static_cast<std::uint32_t>(major(target.dev));
  const auto dev_minor = static_cast<std::uint32_t>(minor(target.dev));
  for (const auto& waiter : locks) {
    if (!waiter.waiter || waiter.inode != target.inode || waiter.dev_major != dev_major ||
        waiter.dev_minor != dev_minor) {
      continue;
    }
    // POSIX and flock requests carry the waiting process; OFD requests carry -1.
    if (waiter.pid != pid.value && waiter.pid != -1) continue;
    if (request && (waiter.kind != request->kind || waiter.write != request->write ||
                    waiter.start != request->start || waiter.end != request->end)) {
      continue;
    }
    const auto blocker = std::find_if(locks.begin(), locks.end(), [&](const LockEntry& l) {
      return !l.waiter && l.id == waiter.id;
    });
    if (blocker == locks.end()) continue;
    out.found = true;
    out.name = target.link + " " + describeRange(*blocker);
    out.detail = blocker->kind + (blocker->write ? " write" : " read") + " lock; waiting for " +
                 (waiter.write ? "write" : "read");
    if (blocker->kind == "POSIX" && blocker->pid > 0) {
      // POSIX record locks belong to the process that set them.
      out.holders.push_back(Pid{blocker->pid});
    } else {
      // flock and OFD locks belong to an open file description, which any process that
      // inherited it may hold: ask fdinfo who has it.
      out.holders = index.lockHolders(target, *blocker);
    }
    return out;
  }
  return out;
}

}  // namespace wctmon::linux_platform
