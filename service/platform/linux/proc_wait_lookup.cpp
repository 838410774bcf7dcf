#include "platform/linux/proc_wait_lookup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/linux/process_memory.h"

namespace wctmon::linux_platform {

const std::vector<LockEntry>& SampleContext::locks() {
  if (!locks_) {
    std::vector<char> buf(1 << 20);
    const long n = readSmallFile(AT_FDCWD, "/proc/locks", buf);
    locks_ = n > 0 ? parseLocks(std::string_view(buf.data(), static_cast<std::size_t>(n)))
                   : std::vector<LockEntry>{};
  }
  return *locks_;
}

std::optional<Pid> SampleContext::processOfThread(std::int32_t tid) {
  if (auto it = tgid_cache_.find(tid); it != tgid_cache_.end()) return it->second;
  std::optional<Pid> out;
  if (auto tgid = readStatusField(AT_FDCWD, "/proc/" + std::to_string(tid) + "/status", "Tgid")) {
    out = Pid{static_cast<std::int32_t>(*tgid)};
  }
  tgid_cache_.emplace(tid, out);
  return out;
}

MemoryAccess ProcWaitLookup::readMemory(std::uint64_t addr, std::span<std::byte> out) {
  return linux_platform::readMemory(pid_, addr, out);
}

MemoryAccess ProcWaitLookup::readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                              std::vector<FutexWindow>& out) {
  return linux_platform::readFutexWindows(pid_, uaddrs, out);
}

std::optional<std::string> ProcWaitLookup::readString(std::uint64_t addr) {
  return linux_platform::readString(pid_, addr);
}

std::optional<FdTarget> ProcWaitLookup::fdTarget(int fd) { return readFdTarget(pid_, fd); }

std::optional<std::uint64_t> ProcWaitLookup::fdPosition(int fd) {
  return linux_platform::fdPosition(pid_, fd);
}

std::optional<std::uint64_t> ProcWaitLookup::fileSize(int fd) {
  struct stat st {};
  const auto path = "/proc/" + std::to_string(pid_.value) + "/fd/" + std::to_string(fd);
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

std::optional<std::uint64_t> ProcWaitLookup::fifoInode(int dirfd, const std::string& path) {
  // The path as the kernel resolves it, seen from here through the target's own root, cwd
  // or directory descriptor.
  const std::string base = "/proc/" + std::to_string(pid_.value);
  const std::string full = path.starts_with('/') ? base + "/root" + path
                           : dirfd == AT_FDCWD   ? base + "/cwd/" + path
                                               : base + "/fd/" + std::to_string(dirfd) + "/" + path;
  struct stat st {};
  if (::stat(full.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_ino);
}

std::vector<Pid> ProcWaitLookup::children() { return readChildren(task_fd_, tasks_.all()); }

std::optional<StatFields> ProcWaitLookup::processStat(Pid pid) { return readProcessStat(pid); }

bool ProcWaitLookup::heldByUs(std::int32_t tid) {
  // The tracer is a thread (a worker of ours); its process is what tells.
  const auto tracer = readStatusField(task_fd_, std::to_string(tid) + "/status", "TracerPid");
  if (!tracer || *tracer <= 0) return false;
  const auto process = context_.processOfThread(static_cast<std::int32_t>(*tracer));
  return process && process->value == ::getpid();
}

std::optional<std::uint64_t> ProcWaitLookup::unixPeer(std::uint64_t inode) {
  return unixPeerInode(inode);
}

std::chrono::nanoseconds ProcWaitLookup::now(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace wctmon::linux_platform
