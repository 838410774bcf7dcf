#include "platform/linux/process_memory.h"

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

constexpr std::size_t kMaxIov = 1024;  // IOV_MAX

/// process_vm_readv of process `pid`; when it is not found (ESRCH), once more through a live
/// thread of it: a process whose main thread has ended has no memory by its pid any more.
ssize_t readVm(Pid pid, const iovec* local, std::size_t local_count, const iovec* remote,
               std::size_t remote_count) {
  const ssize_t n = ::process_vm_readv(pid.value, local, local_count, remote, remote_count, 0);
  if (n >= 0 || errno != ESRCH) return n;
  const Pid live = liveTaskOf(pid);
  if (live == pid) {
    errno = ESRCH;
    return -1;
  }
  return ::process_vm_readv(live.value, local, local_count, remote, remote_count, 0);
}

MemoryAccess accessFromErrno(int err) {
  switch (err) {
    case EPERM:
    case EACCES:
      return MemoryAccess::kDenied;
    case ESRCH:
      return MemoryAccess::kGone;
    default:
      return MemoryAccess::kFault;
  }
}

/// Reads [begin, end) of `window`'s byte range; returns bytes read or -errno.
long readRange(Pid pid, std::uint64_t uaddr, FutexWindow& window, std::size_t begin,
               std::size_t end) {
  iovec local{window.bytes.data() + begin, end - begin};
  iovec remote{reinterpret_cast<void*>(uaddr - kFutexWindowBefore + begin), end - begin};
  const ssize_t n = readVm(pid, &local, 1, &remote, 1);
  return n < 0 ? -errno : n;
}

/// One window whose batch read failed: the word may sit at the edge of a mapping, so read the
/// word's own part first and widen from there.
MemoryAccess readWindowCarefully(Pid pid, std::uint64_t uaddr, FutexWindow& window) {
  const long core = readRange(pid, uaddr, window, kFutexWindowBefore, kFutexWindowSize);
  if (core < 0) return accessFromErrno(static_cast<int>(-core));
  if (core < 4) return MemoryAccess::kFault;
  window.valid_begin = kFutexWindowBefore;
  window.valid_end = kFutexWindowBefore + static_cast<std::size_t>(core);
  if (readRange(pid, uaddr, window, 0, kFutexWindowBefore) ==
      static_cast<long>(kFutexWindowBefore)) {
    window.valid_begin = 0;
  }
  return MemoryAccess::kOk;
}

}  // namespace

MemoryAccess readFutexWindows(Pid pid, std::span<const std::uint64_t> uaddrs,
                              std::vector<FutexWindow>& out) {
  out.assign(uaddrs.size(), FutexWindow{});
  std::vector<iovec> local(uaddrs.size());
  std::vector<iovec> remote(uaddrs.size());
  for (std::size_t i = 0; i < uaddrs.size(); ++i) {
    local[i] = {out[i].bytes.data(), kFutexWindowSize};
    remote[i] = {reinterpret_cast<void*>(uaddrs[i] - kFutexWindowBefore), kFutexWindowSize};
  }
  std::size_t i = 0;
  while (i < uaddrs.size()) {
    const std::size_t count = std::min(kMaxIov, uaddrs.size() - i);
    const ssize_t n = readVm(pid, &local[i], count, &remote[i], count);
    if (n < 0 && (errno == EPERM || errno == EACCES || errno == ESRCH)) {
      return accessFromErrno(errno);
    }
    // Transfers stop at the first element that cannot be read whole; those before it are done.
    std::size_t done = n < 0 ? 0 : static_cast<std::size_t>(n) / kFutexWindowSize;
    for (std::size_t k = 0; k < done; ++k) {
      out[i + k].valid_begin = 0;
      out[i + k].valid_end = kFutexWindowSize;
    }
    i += done;
    if (done < count) {
      const auto status = readWindowCarefully(pid, uaddrs[i], out[i]);
      if (status == MemoryAccess::kDenied || status == MemoryAccess::kGone) return status;
      ++i;
    }
  }
  return MemoryAccess::kOk;
}

MemoryAccess readMemory(Pid pid, std::uint64_t addr, std::span<std::byte> out) {
  iovec local{out.data(), out.size()};
  iovec remote{reinterpret_cast<void*>(addr), out.size()};
  const ssize_t n = readVm(pid, &local, 1, &remote, 1);
  if (n < 0) return accessFromErrno(errno);
  return static_cast<std::size_t>(n) == out.size() ? MemoryAccess::kOk : MemoryAccess::kFault;
}

std::size_t readAvailable(Pid pid, std::uint64_t addr, std::span<std::byte> out) {
  // One element a page: transfers stop at the first element that cannot be read whole.
  constexpr std::uint64_t kPage = 4096;
  constexpr std::size_t kMaxPieces = 16;
  std::array<iovec, kMaxPieces> local{};
  std::array<iovec, kMaxPieces> remote{};
  std::size_t pieces = 0;
  std::size_t at = 0;
  while (at < out.size() && pieces < kMaxPieces) {
    const auto size = std::min<std::uint64_t>(kPage - (addr + at) % kPage, out.size() - at);
    local[pieces] = {out.data() + at, size};
    remote[pieces] = {reinterpret_cast<void*>(addr + at), size};
    ++pieces;
    at += size;
  }
  const ssize_t n = readVm(pid, local.data(), pieces, remote.data(), pieces);
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

std::vector<std::size_t> readAvailableBatch(Pid pid, std::span<const std::uint64_t> addrs,
                                            std::span<const std::span<std::byte>> outs) {
  // Many small reads in few system calls: one element a page, as many elements a call as the
  // kernel takes. A call stops at the first element it cannot read whole; the read that failed
  // is done on its own and the batch goes on after it.
  constexpr std::uint64_t kPage = 4096;
  constexpr std::size_t kMaxIov = 1024;
  std::vector<std::size_t> done(addrs.size(), 0);
  std::vector<iovec> local;
  std::vector<iovec> remote;
  std::vector<std::size_t> owner;  // the read each element belongs to
  local.reserve(kMaxIov);
  remote.reserve(kMaxIov);
  owner.reserve(kMaxIov);
  std::size_t next = 0;
  while (next < addrs.size()) {
    local.clear();
    remote.clear();
    owner.clear();
    std::size_t last = next;
    for (; last < addrs.size(); ++last) {
      const auto out = outs[last];
      std::size_t pieces = 0;
      for (std::size_t at = 0; at < out.size(); at += kPage - (addrs[last] + at) % kPage) ++pieces;
      if (!local.empty() && local.size() + pieces > kMaxIov) break;
      for (std::size_t at = 0; at < out.size();) {
        const auto size =
            std::min<std::uint64_t>(kPage - (addrs[last] + at) % kPage, out.size() - at);
        local.push_back({out.data() + at, size});
        remote.push_back({reinterpret_cast<void*>(addrs[last] + at), size});
        owner.push_back(last);
        at += size;
      }
    }
    const ssize_t n = readVm(pid, local.data(), local.size(), remote.data(), remote.size());
    auto left = n < 0 ? std::size_t{0} : static_cast<std::size_t>(n);
    std::size_t failed = last;
    for (std::size_t i = 0; i < local.size(); ++i) {
      const auto take = std::min(left, local[i].iov_len);
      done[owner[i]] += take;
      left -= take;
      if (take < local[i].iov_len) {
        failed = owner[i];
        break;
      }
    }
    if (failed == last) {
      next = last;
      continue;
    }
    done[failed] = readAvailable(pid, addrs[failed], outs[failed]);
    next = failed + 1;
  }
  return done;
}

std::optional<std::string> readString(Pid pid, std::uint64_t addr, std::size_t max) {
  // Page by page: a string near the end of a mapping must not fail for the bytes past it.
  constexpr std::uint64_t kPage = 4096;
  std::string out;
  while (out.size() < max) {
    const auto chunk = std::min<std::uint64_t>(kPage - addr % kPage, max - out.size());
    std::string part(chunk, '\0');
    if (readMemory(pid, addr, std::as_writable_bytes(std::span(part))) != MemoryAccess::kOk) {
      return std::nullopt;
    }
    if (const auto nul = part.find('\0'); nul != std::string::npos) {
      out.append(part, 0, nul);
      return out;
    }
    out += part;
    addr += chunk;
  }
  return std::nullopt;
}

}  // namespace wctmon::linux_platform
