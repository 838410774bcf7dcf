// What a blocked thread waits on, decoded from what another process controls: the arguments of
// the system call it is in, and its memory (glibc mutexes, rwlocks and condition variables around
// a futex word, timespecs, flock structs, paths). Every answer the lookup gives (memory, its
// descriptors, its relatives, the system's locks) is taken from the input, in the order the
// classifier asks.
#include <sys/syscall.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {
namespace {

constexpr Pid kPid{4242};

/// The system calls the classifier knows, so that most inputs reach a decoder.
constexpr std::array<long, 32> kSyscalls = {
    SYS_futex,       SYS_read,      SYS_write,           SYS_readv,           SYS_writev,
    SYS_poll,        SYS_ppoll,     SYS_select,          SYS_pselect6,        SYS_epoll_wait,
    SYS_epoll_pwait, SYS_nanosleep, SYS_clock_nanosleep, SYS_wait4,           SYS_waitid,
    SYS_fcntl,       SYS_flock,     SYS_recvfrom,        SYS_recvmsg,         SYS_sendto,
    SYS_sendmsg,     SYS_accept,    SYS_accept4,         SYS_connect,         SYS_openat,
    SYS_open,        SYS_pause,     SYS_rt_sigsuspend,   SYS_rt_sigtimedwait, SYS_semtimedop,
    SYS_futex_waitv, SYS_pread64};

class FuzzedProcess final : public WaitLookup, public FdHolders {
 public:
  explicit FuzzedProcess(fuzz::FuzzInput& input) : in_(input) {}

  MemoryAccess readMemory(std::uint64_t /*addr*/, std::span<std::byte> out) override {
    const auto access = this->access();
    if (access != MemoryAccess::kOk) return access;
    fill(out);
    return MemoryAccess::kOk;
  }

  MemoryAccess readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                std::vector<FutexWindow>& out) override {
    const auto access = this->access();
    if (access != MemoryAccess::kOk) return access;
    out.assign(uaddrs.size(), FutexWindow{});
    for (auto& window : out) {
      fill(window.bytes);
      window.valid_begin = in_.below(kFutexWindowSize + 1);
      window.valid_end = window.valid_begin + in_.below(kFutexWindowSize - window.valid_begin + 1);
    }
    return MemoryAccess::kOk;
  }

  std::size_t readStack(std::uint64_t /*sp*/, std::span<std::byte> out) override {
    const auto n = in_.below(out.size() + 1);
    fill(out.first(n));
    return n;
  }

  const CallSite* callSiteAt(std::uint64_t /*address*/) override {
    static const std::array<CallSite, 9> kSites = {{
        {CallSiteRole::kLockOrCondition, "Python lock"},
        {CallSiteRole::kMutexLock, "pthread_mutex"},
        {CallSiteRole::kRwLockRead, "pthread_rwlock"},
        {CallSiteRole::kRwLockWrite, "pthread_rwlock"},
        {CallSiteRole::kJoin, "pthread_join"},
        {CallSiteRole::kCondition, "pthread_cond_wait"},
        {CallSiteRole::kCondition, "absl::CondVar"},
        {CallSiteRole::kUnownedLock, "POSIX semaphore"},
        {CallSiteRole::kGoRuntime, "Go runtime scheduler"},
    }};
    const auto pick = in_.below(kSites.size() * 4);
    return pick < kSites.size() ? &kSites[pick] : nullptr;
  }

  std::vector<std::uint64_t> parkedThreadRegisters(std::int32_t /*tid*/,
                                                   std::uint64_t /*parked_on*/) override {
    std::vector<std::uint64_t> out(in_.below(4));
    for (auto& r : out) r = in_.take<std::uint64_t>();
    return out;
  }

  const PythonState* pythonState() override {
    if (!in_.flag()) return nullptr;
    python_ = PythonState{};
    if (in_.flag()) python_.error = in_.text(64);
    python_.threads.resize(in_.below(4));
    for (auto& thread : python_.threads) {
      thread.thread_id = in_.take<std::uint64_t>();
      thread.native_id = in_.take<std::int32_t>();
      thread.frames.resize(in_.below(3));
      for (auto& frame : thread.frames) {
        frame.file = in_.text(64);
        frame.function = in_.text(64);
        frame.line = in_.take<std::uint32_t>();
      }
    }
    return &python_;
  }

  std::optional<std::string> readString(std::uint64_t /*addr*/) override {
    if (!in_.flag()) return std::nullopt;
    return in_.text(4096);
  }

  std::optional<FdTarget> fdTarget(int /*fd*/) override {
    if (!in_.flag()) return std::nullopt;
    FdTarget t;
    t.kind = static_cast<FdTarget::Kind>(in_.below(9));
    t.link = in_.text(64);
    t.dev = in_.take<std::uint32_t>();
    t.inode = in_.take<std::uint64_t>();
    return t;
  }
  std::optional<std::uint64_t> fdPosition(int /*fd*/) override { return maybe<std::uint64_t>(); }
  std::optional<std::uint64_t> fileSize(int /*fd*/) override { return maybe<std::uint64_t>(); }
  std::optional<std::uint64_t> fifoInode(int /*dirfd*/, const std::string& /*path*/) override {
    return maybe<std::uint64_t>();
  }

  bool hasThread(std::int32_t /*tid*/) override { return in_.flag(); }
  bool heldByUs(std::int32_t /*tid*/) override { return in_.flag(); }
  std::optional<std::int32_t> semaphoreLastPid(int /*semid*/, int /*num*/) override {
    return maybe<std::int32_t>();
  }
  bool mayRefine() override { return in_.flag(); }
  std::optional<Pid> tracerOf(std::int32_t /*tid*/) override {
    if (!in_.flag()) return std::nullopt;
    return Pid{in_.take<std::int32_t>()};
  }
  std::vector<Pid> children() override {
    std::vector<Pid> out(in_.below(4));
    for (auto& p : out) p = Pid{in_.take<std::int32_t>()};
    std::sort(out.begin(), out.end());
    return out;
  }
  std::optional<StatFields> processStat(Pid /*pid*/) override {
    if (!in_.flag()) return std::nullopt;
    StatFields s;
    s.ppid = in_.take<std::int32_t>();
    s.pgrp = in_.take<std::int32_t>();
    return s;
  }
  std::optional<Pid> processOfThread(std::int32_t /*tid*/) override {
    if (!in_.flag()) return std::nullopt;
    return Pid{in_.take<std::int32_t>()};
  }
  std::optional<std::int32_t> hostTid(std::int32_t tid) override {
    if (!in_.flag()) return tid;
    if (!in_.flag()) return std::nullopt;
    return in_.take<std::int32_t>();
  }
  bool sharesMemoryAt(Pid /*other*/, std::uint64_t /*uaddr*/) override { return in_.flag(); }
  const std::vector<LockEntry>& locks() override {
    if (!locks_) locks_ = parseLocks(in_.text(1024));
    return *locks_;
  }
  FdHolders& fdHolders() override { return *this; }
  std::optional<std::uint64_t> unixPeer(std::uint64_t /*inode*/) override {
    return maybe<std::uint64_t>();
  }
  std::chrono::nanoseconds now(clockid_t /*clock*/) override {
    return std::chrono::nanoseconds(in_.take<std::int64_t>());
  }

  std::vector<Pid> holders(const FdTarget& /*target*/, Access /*access*/) override {
    return children();
  }
  std::vector<Pid> lockHolders(const FdTarget& /*target*/, const LockEntry& /*lock*/) override {
    return children();
  }

 private:
  MemoryAccess access() {
    const auto v = in_.take<std::uint8_t>();
    return v < 200 ? MemoryAccess::kOk : static_cast<MemoryAccess>(v % 4);
  }
  void fill(std::span<std::byte> out) {
    const auto b = in_.bytes(out.size());
    std::memcpy(out.data(), b.data(), b.size());
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(b.size()), out.end(), std::byte{0});
  }
  template <typename T>
  std::optional<T> maybe() {
    if (!in_.flag()) return std::nullopt;
    return in_.take<T>();
  }

  fuzz::FuzzInput& in_;
  PythonState python_;
  std::optional<std::vector<LockEntry>> locks_;
};

TaskReading blockedThread(fuzz::FuzzInput& in) {
  TaskReading t;
  t.sample.id = ThreadRef{kPid, Tid{kPid.value + static_cast<std::int32_t>(in.below(8))}};
  t.sample.state =
      static_cast<RunState>(in.below(static_cast<std::size_t>(RunState::kUnknown) + 1));
  t.sample.status = ObjectStatus::kBlocked;
  SyscallState s;
  s.kind = SyscallState::Kind::kInSyscall;
  const auto pick = in.take<std::uint8_t>();
  s.number = pick < 224 ? kSyscalls[pick % kSyscalls.size()] : in.take<std::int16_t>();
  for (auto& arg : s.args) {
    // Small values (descriptors, ops, flags) as often as addresses.
    arg = in.flag() ? in.take<std::uint16_t>() : in.take<std::uint64_t>();
  }
  s.sp = in.take<std::uint64_t>();
  s.pc = in.take<std::uint64_t>();
  t.syscall = s;
  t.wchan = in.text(32);
  return t;
}

}  // namespace
}  // namespace wctmon::linux_platform

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon::linux_platform;
  wctmon::fuzz::FuzzInput input(data, size);
  std::vector<TaskReading> threads(1 + input.below(4));
  for (auto& t : threads) t = blockedThread(input);
  FuzzedProcess process(input);
  classifyWaits(kPid, threads, process);
  for (const auto& t : threads) {
    if (t.sample.wait && t.sample.wait->timeout) {
      WCTMON_FUZZ_CHECK(t.sample.wait->timeout->count() >= 0);
    }
  }
  return 0;
}
