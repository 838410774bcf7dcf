// A process as canned text and bytes (its /proc files, its memory, the system's locks and
// descriptors), what the wait classifier looks up, and a test fixture that classifies the wait of
// one thread of it: shared by the tests of the classifier and of each kind of wait.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/format.h"
#include "platform/linux/proc_tree.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform::testing {

inline constexpr Pid kPid{4242};
inline constexpr std::int32_t kWaiter = 4243;
inline constexpr std::int32_t kOwner = 4250;  // a thread of the process
inline constexpr std::uint64_t kArena = 0x7f0000000000;
inline constexpr std::uint64_t kStack = 0x7ffd00000000;  // the waiter's stack pointer
inline constexpr std::uint32_t kFutexWaitPrivate = 0x80;
inline constexpr std::uint32_t kFutexWaitBitsetPrivate = 0x89;
inline constexpr std::uint32_t kFutexWaitBitsetPrivateRealtime = 0x189;
inline constexpr std::uint32_t kFutexWaitBitsetShared = 0x109;
inline constexpr std::uint32_t kFutexLockPiPrivate = 0x86;
inline constexpr std::uint32_t kFutexLockPi2Private = 0x8d;
inline constexpr std::uint32_t kFutexLockPi2PrivateRealtime = 0x18d;

/// A process as canned text and bytes: what /proc and its memory would say.
class FakeProcess final : public WaitLookup, public FdHolders {
 public:
  FakeProcess() : arena_(64 * 1024) {}

  // Memory: one arena at kArena; anything else faults.
  void place(std::uint64_t addr, const void* bytes, std::size_t size) {
    ASSERT_TRUE(addr >= kArena && addr + size <= kArena + arena_.size());
    std::memcpy(arena_.data() + (addr - kArena), bytes, size);
  }
  template <typename T>
  void place(std::uint64_t addr, const T& value) {
    place(addr, &value, sizeof(T));
  }
  void placeString(std::uint64_t addr, const std::string& text) {
    place(addr, text.c_str(), text.size() + 1);
  }
  /// What every read of memory says instead, when not kOk (denied, or the process gone).
  MemoryAccess memory = MemoryAccess::kOk;
  int window_reads = 0;
  std::vector<std::uint64_t> windows_asked;

  /// Descriptor `fd` of the process: what readlink says of it, and its inode.
  void fd(int fd, const std::string& link, FdTarget::Kind kind, ino_t inode,
          dev_t dev = makedev(0xfe, 0)) {
    fds_[fd] = FdTarget{kind, link, dev, inode};
  }
  std::map<int, std::string> fdinfo;           // canned fdinfo text of the process's descriptors
  std::map<int, std::uint64_t> file_sizes;     // what stat of /proc/PID/fd/N says
  std::map<std::string, std::uint64_t> fifos;  // "dirfd:path" -> inode of a FIFO there

  std::set<std::int32_t> threads{4242, kWaiter, kOwner};
  std::vector<Pid> children_of;
  std::map<std::int32_t, std::string> stat;    // canned stat text of processes
  std::map<std::int32_t, std::string> status;  // canned status text of threads anywhere
  std::string proc_locks;                      // canned /proc/locks

  /// A descriptor of another process: its link and canned fdinfo text.
  struct Held {
    Pid pid;
    std::string link;
    std::string fdinfo;
  };
  std::vector<Held> held;
  std::map<std::uint64_t, std::uint64_t> unix_peers;
  std::map<clockid_t, std::chrono::nanoseconds> clocks;

  MemoryAccess readMemory(std::uint64_t addr, std::span<std::byte> out) override {
    if (memory != MemoryAccess::kOk) return memory;
    if (addr < kArena || addr + out.size() > kArena + arena_.size()) return MemoryAccess::kFault;
    std::memcpy(out.data(), arena_.data() + (addr - kArena), out.size());
    return MemoryAccess::kOk;
  }
  MemoryAccess readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                std::vector<FutexWindow>& out) override {
    ++window_reads;
    windows_asked.assign(uaddrs.begin(), uaddrs.end());
    if (memory != MemoryAccess::kOk) return memory;
    out.assign(uaddrs.size(), FutexWindow{});
    for (std::size_t i = 0; i < uaddrs.size(); ++i) {
      const std::uint64_t begin = uaddrs[i] - kFutexWindowBefore;
      if (begin < kArena || begin + kFutexWindowSize > kArena + arena_.size()) continue;
      std::memcpy(out[i].bytes.data(), arena_.data() + (begin - kArena), kFutexWindowSize);
      out[i].valid_end = kFutexWindowSize;
    }
    return MemoryAccess::kOk;
  }
  std::size_t readStack(std::uint64_t sp, std::span<std::byte> out) override {
    if (memory != MemoryAccess::kOk || sp < kArena || sp >= kArena + arena_.size()) return 0;
    const auto n = std::min<std::size_t>(out.size(), kArena + arena_.size() - sp);
    std::memcpy(out.data(), arena_.data() + (sp - kArena), n);
    return n;
  }
  /// Code addresses that are call sites, as the process's symbols would say.
  std::map<std::uint64_t, CallSite> call_sites;
  const CallSite* callSiteAt(std::uint64_t address) override {
    auto it = call_sites.find(address);
    return it == call_sites.end() ? nullptr : &it->second;
  }
  /// What a ptrace stop of a parked thread would read of its registers.
  std::map<std::int32_t, std::vector<std::uint64_t>> registers;
  std::vector<std::uint64_t> parkedThreadRegisters(std::int32_t tid,
                                                   std::uint64_t /*parked_on*/) override {
    return registers.contains(tid) ? registers[tid] : std::vector<std::uint64_t>{};
  }
  /// The process's CPython interpreter, as its memory would say; none by default.
  std::optional<PythonState> python;
  int python_reads = 0;
  const PythonState* pythonState() override {
    ++python_reads;
    return python ? &*python : nullptr;
  }
  std::optional<std::string> readString(std::uint64_t addr) override {
    if (memory != MemoryAccess::kOk || addr < kArena || addr >= kArena + arena_.size()) {
      return std::nullopt;
    }
    const auto* start = reinterpret_cast<const char*>(arena_.data() + (addr - kArena));
    return std::string(start, ::strnlen(start, arena_.size() - (addr - kArena)));
  }
  std::optional<FdTarget> fdTarget(int fd) override {
    auto it = fds_.find(fd);
    return it == fds_.end() ? std::nullopt : std::optional(it->second);
  }
  std::optional<std::uint64_t> fdPosition(int fd) override {
    return fdinfo.contains(fd) ? parseFdinfoPos(fdinfo[fd]) : std::nullopt;
  }
  std::optional<std::uint64_t> fileSize(int fd) override {
    return file_sizes.contains(fd) ? std::optional(file_sizes[fd]) : std::nullopt;
  }
  std::optional<std::uint64_t> fifoInode(int dirfd, const std::string& path) override {
    const auto key = std::to_string(dirfd) + ":" + path;
    return fifos.contains(key) ? std::optional(fifos[key]) : std::nullopt;
  }
  bool hasThread(std::int32_t tid) override { return threads.contains(tid); }
  bool heldByUs(std::int32_t tid) override { return held_by_us.contains(tid); }
  std::optional<std::int32_t> semaphoreLastPid(int semid, int num) override {
    const auto it = semaphore_pids.find({semid, num});
    return it == semaphore_pids.end() ? std::nullopt : std::optional(it->second);
  }
  std::map<std::pair<int, int>, std::int32_t> semaphore_pids;  // semctl GETPID answers
  bool mayRefine() override { return true; }
  std::optional<Pid> tracerOf(std::int32_t tid) override {
    if (held_by_us.contains(tid)) return Pid{::getpid()};
    return tracers.contains(tid) ? std::optional(tracers[tid]) : std::nullopt;
  }
  std::map<std::int32_t, Pid> tracers;  // threads in a tracing stop of another process
  std::set<std::int32_t> held_by_us;    // threads in a tracing stop of the service's own capture
  std::vector<Pid> children() override { return children_of; }
  std::optional<StatFields> processStat(Pid pid) override {
    return stat.contains(pid.value) ? parseStat(stat[pid.value]) : std::nullopt;
  }
  std::optional<Pid> processOfThread(std::int32_t tid) override {
    if (threads.contains(tid)) return kPid;
    if (!status.contains(tid)) return std::nullopt;
    const auto tgid = parseStatusField(status[tid], "Tgid");
    return tgid ? std::optional(Pid{static_cast<std::int32_t>(*tgid)}) : std::nullopt;
  }
  /// The process's PID namespace, as NSpid would tell it: its number there -> the service's.
  /// Empty: the process shares the service's namespace.
  std::map<std::int32_t, std::int32_t> namespace_tids;
  std::optional<std::int32_t> hostTid(std::int32_t tid) override {
    if (namespace_tids.empty()) return tid;
    const auto it = namespace_tids.find(tid);
    return it == namespace_tids.end() ? std::nullopt : std::optional(it->second);
  }
  /// The processes that map the memory of the process's locks; unset: every process does.
  std::optional<std::set<std::int32_t>> sharing;
  bool sharesMemoryAt(Pid other, std::uint64_t /*uaddr*/) override {
    return other == kPid || !sharing || sharing->contains(other.value);
  }
  const std::vector<LockEntry>& locks() override {
    locks_ = parseLocks(proc_locks);
    return locks_;
  }
  FdHolders& fdHolders() override { return *this; }
  std::optional<std::uint64_t> unixPeer(std::uint64_t inode) override {
    return unix_peers.contains(inode) ? std::optional(unix_peers[inode]) : std::nullopt;
  }
  std::chrono::nanoseconds now(clockid_t clock) override { return clocks[clock]; }

  // Who holds what, from the canned fdinfo of the other processes' descriptors.
  std::vector<Pid> holders(const FdTarget& target, Access access) override {
    std::set<Pid> out;
    for (const auto& h : held) {
      if (h.link != target.link) continue;
      const auto mode = parseFdinfoFlags(h.fdinfo).value_or(0) & O_ACCMODE;
      const bool readable = mode == O_RDONLY || mode == O_RDWR;
      const bool writable = mode == O_WRONLY || mode == O_RDWR;
      if ((access == Access::kReadable && !readable) ||
          (access == Access::kWritable && !writable)) {
        continue;
      }
      out.insert(h.pid);
    }
    return {out.begin(), out.end()};
  }
  std::vector<Pid> lockHolders(const FdTarget& target, const LockEntry& lock) override {
    std::set<Pid> out;
    for (const auto& h : held) {
      if (h.link != target.link) continue;
      std::string_view text = h.fdinfo;
      while (!text.empty()) {
        const auto nl = text.find('\n');
        if (auto l = parseLockLine(text.substr(0, nl));
            l && !l->waiter && l->kind == lock.kind && l->write == lock.write &&
            l->inode == lock.inode && l->start == lock.start && l->end == lock.end) {
          out.insert(h.pid);
        }
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
      }
    }
    return {out.begin(), out.end()};
  }

 private:
  std::vector<std::byte> arena_;
  std::map<int, FdTarget> fds_;
  std::vector<LockEntry> locks_;
};

/// Where the syscall lines below say the thread is (its pc), and a return address further up.
inline constexpr std::uint64_t kSyscallPc = 0x7f9164635e96;
inline constexpr std::uint64_t kReturnAddress = 0x7f9164640123;

/// A syscall line as /proc/PID/task/TID/syscall prints it.
inline std::string syscallLine(long number, std::vector<std::uint64_t> args,
                               std::uint64_t sp = kStack) {
  args.resize(6);
  std::string out = std::to_string(number);
  for (const auto a : args) out += " " + hexString(a);
  return out + " " + hexString(sp) + " " + hexString(kSyscallPc) + "\n";
}

/// A thread as task_reader.h reads one that sleeps: its stat and syscall lines.
inline TaskReading sleeping(std::int32_t tid, const std::string& syscall, char state = 'S',
                            const std::string& wchan = {}) {
  TaskReading t;
  t.sample.id = ThreadRef{kPid, Tid{tid}};
  const auto stat = parseStat(statLine(tid, "worker", state));
  t.sample.name = stat->comm;
  t.sample.state = stat->state;
  t.sample.status = ObjectStatus::kBlocked;
  t.syscall = parseSyscall(syscall);
  t.wchan = wchan;
  return t;
}

/// Classifies the waits of threads of a FakeProcess.
class WaitClassifierTest : public ::testing::Test {
 protected:
  /// The wait of one thread blocked in `syscall`.
  WaitObject waitOf(const std::string& syscall, char state = 'S', const std::string& wchan = {}) {
    std::vector<TaskReading> threads{sleeping(kWaiter, syscall, state, wchan)};
    classifyWaits(kPid, threads, process_);
    EXPECT_TRUE(threads[0].sample.wait.has_value());
    return threads[0].sample.wait.value_or(WaitObject{});
  }

  std::string futex(std::uint64_t uaddr, std::uint32_t op, std::uint32_t val,
                    std::uint64_t timeout = 0) {
    return syscallLine(SYS_futex, {uaddr, op, val, timeout});
  }

  FakeProcess process_;
};

}  // namespace wctmon::linux_platform::testing
