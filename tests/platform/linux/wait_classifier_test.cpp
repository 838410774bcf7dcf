// What a blocked thread waits on, classified from canned /proc text (its stat and syscall lines,
// status, fdinfo, /proc/locks) and canned process memory (glibc objects, timespecs, flock
// structs, paths): every wait kind the engine knows.
#include "platform/linux/wait_classifier.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <cstring>
#include <map>
#include <set>

#include "model/format.h"
#include "platform/linux/proc_tree.h"

namespace wctmon::linux_platform {
namespace {

using std::chrono::milliseconds;
using testing::statLine;

constexpr Pid kPid{4242};
constexpr std::int32_t kWaiter = 4243;
constexpr std::int32_t kOwner = 4250;  // a thread of the process
constexpr std::uint64_t kArena = 0x7f0000000000;
constexpr std::uint64_t kStack = 0x7ffd00000000;  // the waiter's stack pointer
constexpr std::uint32_t kFutexWaitPrivate = 0x80;
constexpr std::uint32_t kFutexWaitBitsetPrivate = 0x89;
constexpr std::uint32_t kFutexWaitBitsetPrivateRealtime = 0x189;
constexpr std::uint32_t kFutexWaitBitsetShared = 0x109;
constexpr std::uint32_t kFutexLockPiPrivate = 0x86;
constexpr std::uint32_t kFutexLockPi2Private = 0x8d;
constexpr std::uint32_t kFutexLockPi2PrivateRealtime = 0x18d;

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
constexpr std::uint64_t kSyscallPc = 0x7f9164635e96;
constexpr std::uint64_t kReturnAddress = 0x7f9164640123;

/// A syscall line as /proc/PID/task/TID/syscall prints it.
std::string syscallLine(long number, std::vector<std::uint64_t> args, std::uint64_t sp = kStack) {
  args.resize(6);
  std::string out = std::to_string(number);
  for (const auto a : args) out += " " + hexString(a);
  return out + " " + hexString(sp) + " " + hexString(kSyscallPc) + "\n";
}

/// A thread as task_reader.h reads one that sleeps: its stat and syscall lines.
TaskReading sleeping(std::int32_t tid, const std::string& syscall, char state = 'S',
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

// --- futexes: glibc objects in the process's memory ----------------------------------------

TEST_F(WaitClassifierTest, AContendedMutexIsOwnedByTheThreadInItsOwnerField) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.name, hexString(kArena + 0x100));
  EXPECT_EQ(w.key, kArena + 0x100);
  EXPECT_EQ(w.detail.str(), "pthread_mutex (normal)");
  EXPECT_TRUE(w.alertable);  // S: a signal interrupts it
  EXPECT_FALSE(w.timeout.has_value());
}

TEST_F(WaitClassifierTest, AProcessSharedMutexOwnerIsFoundInAnotherProcessByItsStatus) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_t m;
  pthread_mutex_init(&m, &attr);
  m.__data.__lock = 2;
  m.__data.__owner = 7001;
  process_.place(kArena + 0x100, m);
  process_.status[7001] = "Name:\tother\nTgid:\t7000\nPid:\t7001\n";
  const auto w = waitOf(futex(kArena + 0x100, 0, 2));  // shared: no private flag
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{Pid{7000}, Tid{7001}}}));
}

TEST_F(WaitClassifierTest, AMutexWhoseOwnerExitedIsAbandoned) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = 4999;  // no such thread anywhere
  process_.place(kArena + 0x100, m);
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_EQ(w.detail.str(), "pthread_mutex (normal), owner thread 4999 has exited");
}

TEST_F(WaitClassifierTest, AMutexInheritedLockedThroughForkNamesTheParentsThread) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = 4101;
  process_.place(kArena + 0x100, m);
  process_.status[4101] = "Tgid:\t4100\n";
  process_.stat[kPid.value] = statLine(kPid.value, "child", 'S', 500, 0x400040, 4100);
  auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_EQ(w.detail.str(),
            "pthread_mutex (normal), inherited locked through fork(): its owner, thread 4101, "
            "lives in the "
            "parent process 4100, not in this one, so nothing here can unlock it");

  process_.stat[kPid.value] = statLine(kPid.value, "child", 'S', 500, 0x400040, 1);
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(
      w.detail.str(),
      "pthread_mutex (normal), owner thread 4101 is not in this process (it is a thread of process "
      "4100), so nothing here can unlock it");
}

TEST_F(WaitClassifierTest, APriorityInheritanceMutexOwnerComesFromTheWord) {
  process_.place(kArena + 0x100, static_cast<std::uint32_t>(kOwner));
  const auto w = waitOf(futex(kArena + 0x100, kFutexLockPiPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.detail.str(), "priority-inheritance mutex");
}

TEST_F(WaitClassifierTest, APriorityInheritanceLockTimesOutAtAnAbsoluteTime) {
  process_.place(kArena + 0x100, static_cast<std::uint32_t>(kOwner));
  process_.place(kArena + 0x800, timespec{1003, 250'000'000});
  process_.clocks[CLOCK_REALTIME] = std::chrono::seconds(1000);
  process_.clocks[CLOCK_MONOTONIC] = std::chrono::seconds(1002);
  // FUTEX_LOCK_PI: CLOCK_REALTIME, whatever the flags say (pthread_mutex_timedlock).
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexLockPiPrivate, 0, kArena + 0x800)).timeout,
            milliseconds(3250));
  // FUTEX_LOCK_PI2: the clock its flags name (pthread_mutex_clocklock).
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexLockPi2Private, 0, kArena + 0x800)).timeout,
            milliseconds(1250));
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexLockPi2PrivateRealtime, 0, kArena + 0x800)).timeout,
            milliseconds(3250));
}

TEST_F(WaitClassifierTest, ARwlockHeldForWritingIsOwnedByTheWriter) {
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  rw.__data.__readers = 1 | 2;  // write phase, write-locked
  rw.__data.__cur_writer = kOwner;
  process_.place(kArena + 0x200, rw);
  const std::uint64_t word = kArena + 0x200 + offsetof(__pthread_rwlock_arch_t, __wrphase_futex);
  process_.call_sites[kSyscallPc] = {CallSiteRole::kRwLockRead, "pthread_rwlock"};
  const auto w = waitOf(futex(word, kFutexWaitBitsetPrivate, 1));
  EXPECT_EQ(w.type, ObjectType::kRwLock);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.name, hexString(kArena + 0x200));  // the lock, not the word inside it
  EXPECT_EQ(w.key, word);
}

TEST_F(WaitClassifierTest, ARwlockHeldForReadingHasNoKnownOwner) {
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  rw.__data.__readers = 2 << 3;  // two readers
  process_.place(kArena + 0x200, rw);
  const std::uint64_t word = kArena + 0x200 + offsetof(__pthread_rwlock_arch_t, __wrphase_futex);
  process_.call_sites[kSyscallPc] = {CallSiteRole::kRwLockWrite, "pthread_rwlock"};
  auto w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kRwLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_EQ(w.detail.str(),
            "pthread_rwlock held for reading by 2 reader(s); readers are not recorded, owner "
            "unknown");
  // The same words waited on from pthread_cond_wait are a condition variable's (the fields of a
  // mutex + condition variable + zeroes, as HotSpot's Parker lays them out, look so), and from
  // code without symbols they are not said to be a rwlock either.
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_wait"};
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "pthread_cond_wait " + hexString(word));
  process_.call_sites.clear();
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
}

TEST_F(WaitClassifierTest, ATimedFutexWaitGoingOnAsRestartSyscallIsStillThatWait) {
  // After a stop or a signal a timed wait continues as restart_syscall, the futex call's
  // arguments still in their registers.
  const std::uint64_t word = kArena + 0x300;
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_timedwait"};
  auto w = waitOf(syscallLine(SYS_restart_syscall, {word, kFutexWaitBitsetPrivate, 0, 0}));
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.name, "pthread_cond_timedwait " + hexString(word));
  // Not in a futex call site (a restarted nanosleep, poll): not taken for a futex.
  process_.call_sites.clear();
  w = waitOf(syscallLine(SYS_restart_syscall, {word, kFutexWaitBitsetPrivate, 0, 0}));
  EXPECT_NE(w.type, ObjectType::kFutex);
  EXPECT_NE(w.type, ObjectType::kCondition);
}

TEST_F(WaitClassifierTest, TheCallSiteIsTheInnermostReturnAddressOnTheStackThatIsOne) {
  // Futex wrappers between the call site and the system call have no site of their own.
  const std::uint64_t frames[] = {0x1234, kArena + 0x10, kReturnAddress, kSyscallPc};
  process_.place(kArena + 0x1000, frames);
  process_.call_sites[kReturnAddress] = {CallSiteRole::kUnownedLock, "Rust std::sync::Mutex"};
  process_.call_sites[kSyscallPc + 1] = {CallSiteRole::kCondition, "Rust thread park"};
  const auto w =
      waitOf(syscallLine(SYS_futex, {kArena + 0x400, kFutexWaitPrivate, 2}, kArena + 0x1000));
  EXPECT_EQ(w.type, ObjectType::kUnownedLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "Rust std::sync::Mutex " + hexString(kArena + 0x400));
  EXPECT_EQ(w.detail.str(),
            "Rust std::sync::Mutex: it records no owner, so who holds it is not known");
}

TEST_F(WaitClassifierTest, AConditionWaitRetakingItsMutexWaitsOnTheMutexOwner) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_wait"};
  const auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
}

TEST_F(WaitClassifierTest, AJoinWaitsOnTheJoinedThread) {
  process_.place(kArena + 0x300, static_cast<std::uint32_t>(kOwner));
  const auto w = waitOf(futex(kArena + 0x300, kFutexWaitBitsetShared, kOwner));
  EXPECT_EQ(w.type, ObjectType::kThreadWait);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "thread 4250");
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.detail.str(), "pthread_join");
}

TEST_F(WaitClassifierTest, AConditionVariableHasNoOwnerAndATimedWaitSaysWhatIsLeft) {
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  process_.place(kArena + 0x400, cond);
  const std::uint64_t word = kArena + 0x400 + 8;
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_timedwait"};
  auto w = waitOf(futex(word, kFutexWaitBitsetPrivateRealtime, 0));
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.detail.str(), "waits to be signalled; a condition has no owner");
  EXPECT_FALSE(w.timeout.has_value());

  // FUTEX_WAIT_BITSET: an absolute time, on the clock its flags name.
  process_.place(kArena + 0x800, timespec{1003, 250'000'000});
  process_.clocks[CLOCK_REALTIME] = std::chrono::seconds(1000);
  process_.clocks[CLOCK_MONOTONIC] = std::chrono::seconds(1002);
  w = waitOf(futex(word, kFutexWaitBitsetPrivateRealtime, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(3250));
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(1250));
  // One already past has nothing left.
  process_.clocks[CLOCK_MONOTONIC] = std::chrono::seconds(2000);
  w = waitOf(futex(word, kFutexWaitBitsetPrivate, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(0));
  // FUTEX_WAIT: relative.
  w = waitOf(futex(word, kFutexWaitPrivate, 0, kArena + 0x800));
  EXPECT_EQ(w.timeout, milliseconds(1'003'250));
}

TEST_F(WaitClassifierTest, ATimespecNoKernelWouldTakeIsNoTimeout) {
  process_.place(kArena + 0x800, timespec{1, 2'000'000'000});
  process_.place(kArena + 0x810, timespec{-1, 0});
  const std::uint64_t word = kArena + 0x400;
  EXPECT_FALSE(waitOf(futex(word, kFutexWaitPrivate, 0, kArena + 0x800)).timeout.has_value());
  EXPECT_FALSE(waitOf(futex(word, kFutexWaitPrivate, 0, kArena + 0x810)).timeout.has_value());
  EXPECT_FALSE(waitOf(futex(word, kFutexWaitPrivate, 0, 0x1000)).timeout.has_value());
}

TEST_F(WaitClassifierTest, AThreadParkedAfterAPiEdeadlkWaitsOnTheMutexItWanted) {
  // Nothing to say which lock: a futex on the thread's own stack.
  auto w = waitOf(syscallLine(SYS_futex, {kArena + 0x40, kFutexWaitPrivate, 0, 0}, kArena + 0x10));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.detail.str(), "futex on the thread's own stack, waiting for 0 without a timeout");

  // pthread_mutex_lock keeps a pointer into the mutex (its __kind) in a register.
  pthread_mutex_t m{};
  m.__data.__lock = static_cast<int>(kOwner | 0x80000000U);
  m.__data.__owner = kOwner;
  m.__data.__kind = 32;  // PTHREAD_MUTEX_PRIO_INHERIT_NP (glibc pthreadP.h)
  process_.place(kArena + 0x2000, m);
  process_.registers[kWaiter] = {0, kArena + 0x2000 + 16};
  w = waitOf(syscallLine(SYS_futex, {kArena + 0x40, kFutexWaitPrivate, 0, 0}, kArena + 0x10));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, hexString(kArena + 0x2000));
  EXPECT_EQ(w.key, kArena + 0x2000);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_NE(w.detail.str().find("EDEADLK"), std::string::npos) << w.detail.str();

  // One held by the parked thread itself is not the one it wanted.
  m.__data.__lock = kWaiter;
  m.__data.__owner = kWaiter;
  process_.place(kArena + 0x2000, m);
  w = waitOf(syscallLine(SYS_futex, {kArena + 0x40, kFutexWaitPrivate, 0, 0}, kArena + 0x10));
  EXPECT_EQ(w.type, ObjectType::kFutex);
}

TEST_F(WaitClassifierTest, UnreadableMemoryIsSaidForEveryFutexWaiter) {
  process_.memory = MemoryAccess::kDenied;
  auto w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.status, ObjectStatus::kNoAccess);
  EXPECT_EQ(w.detail.str(), "process memory is not readable");
  process_.memory = MemoryAccess::kGone;
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2));
  EXPECT_EQ(w.status, ObjectStatus::kError);
  EXPECT_EQ(w.detail.str(), "process exited during the read");
}

TEST_F(WaitClassifierTest, TheFutexWaitsOfAllThreadsAreReadTogetherOnce) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  std::vector<TaskReading> threads{sleeping(4243, futex(kArena + 0x400, kFutexWaitPrivate, 0)),
                                   sleeping(4244, futex(kArena + 0x100, kFutexWaitPrivate, 2)),
                                   sleeping(4245, futex(kArena + 0x100, kFutexWaitPrivate, 2)),
                                   sleeping(4246, syscallLine(SYS_pause, {}))};
  threads.push_back(sleeping(4247, ""));
  threads.back().sample.status = ObjectStatus::kRunning;
  threads.back().syscall.reset();
  classifyWaits(kPid, threads, process_);
  EXPECT_EQ(process_.window_reads, 1);
  EXPECT_EQ(process_.windows_asked, (std::vector<std::uint64_t>{kArena + 0x100, kArena + 0x400}));
  EXPECT_EQ(threads[0].sample.wait->type, ObjectType::kFutex);
  EXPECT_EQ(threads[1].sample.wait->owner_threads, threads[2].sample.wait->owner_threads);
  EXPECT_EQ(threads[3].sample.wait->type, ObjectType::kSignalWait);
  EXPECT_FALSE(threads[4].sample.wait.has_value());  // running: nothing to classify

  std::vector<TaskReading> none{sleeping(4243, syscallLine(SYS_pause, {}))};
  classifyWaits(kPid, none, process_);
  EXPECT_EQ(process_.window_reads, 1);  // no futex waiter, no read
}

// --- children ------------------------------------------------------------------------------

// --- CPython's lock: the object on the waiter's stack and its Python frames ---------------

/// A thread blocked in CPython's lock: the semaphore it waits on, the object that holds that
/// semaphore (pointed to from its stack), and the interpreter's record of its threads.
class PythonLockTest : public WaitClassifierTest {
 protected:
  static constexpr std::uint64_t kSem = kArena + 0x3000;
  static constexpr std::uint64_t kObject = kArena + 0x3100;
  static constexpr std::uint64_t kType = kArena + 0x3200;
  static constexpr std::uint64_t kOwnerPthread = kArena + 0x4000;
  static constexpr std::uint64_t kWaiterPthread = kArena + 0x5000;
  static constexpr std::uint64_t kSp = kArena + 0x1000;

  void SetUp() override {
    process_.call_sites[kSyscallPc] = {CallSiteRole::kLockOrCondition, "Python lock", false, true,
                                       "a CPython lock"};
    const std::uint64_t stack[] = {0x1234, kSp + 0x40, kReturnAddress, kObject, 7};
    process_.place(kSp, stack);
    object("_thread.RLock", kOwnerPthread, 1);
    PythonState state;
    state.version = 0x030b02f0;
    state.threads.push_back({kOwnerPthread, kOwner, {frame("app.py", 20, "second")}, false});
    state.threads.push_back({kWaiterPthread,
                             kWaiter,
                             {frame("app.py", 9, "first"), frame("app.py", 30, "<module>")},
                             false});
    process_.python = state;
  }
  static StackFrame frame(std::string file, std::uint32_t line, std::string function) {
    StackFrame f;
    f.file = std::move(file);
    f.line = line;
    f.function = std::move(function);
    return f;
  }
  /// The object: its type (by name), the semaphore, and an RLock's owner and count.
  void object(const std::string& type, std::uint64_t owner, std::uint64_t count) {
    const std::uint64_t head[] = {1, kType, kSem, owner, count};
    process_.place(kObject, head);
    process_.place(kType + 24, kType + 0x100);
    process_.placeString(kType + 0x100, type);
  }
  TaskReading waiter() {
    std::vector<TaskReading> threads{
        sleeping(kWaiter, syscallLine(SYS_futex, {kSem, kFutexWaitBitsetPrivate, 0}, kSp))};
    classifyWaits(kPid, threads, process_);
    EXPECT_TRUE(threads[0].sample.wait.has_value());
    return threads[0];
  }
};

TEST_F(PythonLockTest, AnRLockIsOwnedByTheThreadItRecordsAndTheWaiterGetsItsPythonFrames) {
  const auto t = waiter();
  const auto& w = *t.sample.wait;
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(w.name, "Python threading.RLock " + hexString(kObject));
  EXPECT_EQ(w.key, kSem);
  EXPECT_EQ(w.detail.str(),
            "threading.RLock held by thread 4250 (taken 1 time(s)), as the RLock records it; "
            "innermost Python frame: first at app.py:9");
  ASSERT_TRUE(t.sample.runtime_stack.has_value());
  EXPECT_EQ(t.sample.runtime_stack->runtime, "Python");
  EXPECT_EQ(t.sample.runtime_stack->frames, process_.python->threads[1].frames);
}

TEST_F(PythonLockTest, AnRLockOwnerIsFoundInGlibcsThreadWhenTheInterpreterIsNotReadable) {
  process_.python->error = "Python frames not readable for this interpreter: version 3.12";
  process_.place(kOwnerPthread, kOwnerPthread);  // the TCB points to itself
  process_.place(kOwnerPthread + kPthreadTidOffset, kOwner);
  auto t = waiter();
  EXPECT_EQ(t.sample.wait->status, ObjectStatus::kOwned);
  EXPECT_EQ(t.sample.wait->owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_FALSE(t.sample.runtime_stack.has_value());
  // Memory that is no struct pthread names no owner.
  process_.place(kOwnerPthread, std::uint64_t{0});
  t = waiter();
  EXPECT_EQ(t.sample.wait->type, ObjectType::kMutex);
  EXPECT_EQ(t.sample.wait->status, ObjectStatus::kUnknown);
  EXPECT_TRUE(t.sample.wait->owner_threads.empty());
}

TEST_F(PythonLockTest, AnRLockWhoseOwnerTheInterpreterDoesNotKnowIsAbandoned) {
  object("_thread.RLock", kArena + 0x6000, 2);
  const auto w = *waiter().sample.wait;
  EXPECT_EQ(w.status, ObjectStatus::kAbandoned);
  EXPECT_TRUE(w.owner_threads.empty());
}

TEST_F(PythonLockTest, APlainLockTakenByUserCodeIsALockThatRecordsNoOwner) {
  object("_thread.lock", 0, 0);
  const auto w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kUnownedLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "Python threading.Lock " + hexString(kObject));
  EXPECT_TRUE(w.owner_threads.empty());
}

TEST_F(PythonLockTest, WaitsOfTheStandardLibraryAndQueuesAreConditions) {
  object("_thread.lock", 0, 0);
  process_.python->threads[1].frames[0] =
      frame("/usr/lib/python3.11/threading.py", 320, "Condition.wait");
  auto w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "Python threading.Condition.wait " + hexString(kSem));
  // A SimpleQueue's get waits on its own lock, called straight from any code.
  object("_queue.SimpleQueue", 1, 0);
  process_.python->threads[1].frames[0] = frame("app.py", 9, "first");
  w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kCondition);
  EXPECT_EQ(w.name, "Python queue.SimpleQueue.get " + hexString(kSem));
  // But an RLock taken back after Condition.wait is the RLock, owned.
  object("_thread.RLock", kOwnerPthread, 1);
  process_.python->threads[1].frames[0] =
      frame("/usr/lib/python3.11/threading.py", 324, "Condition.wait");
  w = *waiter().sample.wait;
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
}

TEST_F(PythonLockTest, WithoutFramesOrObjectTheWaitIsNamedByItsCallSiteAndSaysWhy) {
  object("_thread.lock", 0, 0);
  process_.python->error = "Python frames not readable for this interpreter: version 3.12";
  auto w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.name, "Python lock " + hexString(kSem));
  EXPECT_EQ(w.detail.str(),
            "a CPython lock; Python frames not readable for this interpreter: version 3.12");
  // A type that is none of CPython's locks is not taken for one.
  object("_io.BufferedReader", 0, 0);
  process_.python->error.clear();
  w = *waiter().sample.wait;
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.detail.str(), "a CPython lock; innermost Python frame: first at app.py:9");
}

TEST_F(PythonLockTest, TheInterpreterIsReadOnlyForAThreadInItsLock) {
  process_.call_sites.clear();
  process_.call_sites[kSyscallPc] = {CallSiteRole::kCondition, "pthread_cond_wait"};
  const auto t = waiter();
  EXPECT_EQ(t.sample.wait->type, ObjectType::kCondition);
  EXPECT_EQ(process_.python_reads, 0);
  EXPECT_FALSE(t.sample.runtime_stack.has_value());
}

TEST_F(WaitClassifierTest, WaitpidWaitsOnTheChildrenItCanReap) {
  process_.children_of = {Pid{5001}, Pid{5002}, Pid{5003}};
  process_.stat[kPid.value] = statLine(kPid.value, "parent", 'S', 500, 0x400040, 1, 4242);
  process_.stat[5001] = statLine(5001, "a", 'S', 500, 0x400040, 4242, 4242);
  process_.stat[5002] = statLine(5002, "b", 'S', 500, 0x400040, 4242, 5002);
  process_.stat[5003] = statLine(5003, "c", 'S', 500, 0x400040, 4242, 5002);

  auto w = waitOf(syscallLine(SYS_wait4, {5002}));
  EXPECT_EQ(w.type, ObjectType::kProcessWait);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "process 5002");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5002}}));
  EXPECT_EQ(w.detail.str(), "1 child process(es) can end this wait");
  EXPECT_EQ(w.key, 5002U | (std::uint64_t{1} << 40));

  w = waitOf(syscallLine(SYS_wait4, {static_cast<std::uint64_t>(-1)}));
  EXPECT_EQ(w.name, "any child process");
  EXPECT_EQ(w.owner_processes.size(), 3U);

  w = waitOf(syscallLine(SYS_wait4, {0}));  // its own process group
  EXPECT_EQ(w.name, "process group 4242");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5001}}));

  w = waitOf(syscallLine(SYS_wait4, {static_cast<std::uint64_t>(-5002)}));
  EXPECT_EQ(w.name, "process group 5002");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5002}, Pid{5003}}));

  w = waitOf(syscallLine(SYS_waitid, {P_PID, 5003}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5003}}));
  w = waitOf(syscallLine(SYS_waitid, {P_ALL, 0}));
  EXPECT_EQ(w.owner_processes.size(), 3U);

  w = waitOf(syscallLine(SYS_wait4, {6000}));  // not a child
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_TRUE(w.owner_processes.empty());
}

// --- file locks ----------------------------------------------------------------------------

class FileLockTest : public WaitClassifierTest {
 protected:
  FileLockTest() {
    process_.fd(3, "/srv/data", FdTarget::Kind::kFile, 77);
    process_.fdinfo[3] = "pos:\t200\nflags:\t02\nmnt_id:\t15\n";
    process_.file_sizes[3] = 1000;
  }

  /// Where the waiter's struct flock lies.
  std::uint64_t flockArgument(std::int16_t type, std::int16_t whence, std::int64_t start,
                              std::int64_t len) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = whence;
    lock.l_start = start;
    lock.l_len = len;
    process_.place(kArena + 0x900, lock);
    return kArena + 0x900;
  }
};

TEST_F(FileLockTest, AnFcntlLockWaitIsOwnedByTheProcessHoldingTheRange) {
  process_.proc_locks =
      "1: POSIX  ADVISORY  WRITE 5000 fe:00:77 100 109\n"
      "1: -> POSIX  ADVISORY  WRITE 4242 fe:00:77 100 109\n"
      "2: POSIX  ADVISORY  READ  5100 fe:00:77 0 9\n";
  const auto w =
      waitOf(syscallLine(SYS_fcntl, {3, F_SETLKW, flockArgument(F_WRLCK, SEEK_SET, 100, 10)}));
  EXPECT_EQ(w.type, ObjectType::kFileLock);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "/srv/data [100-109]");
  EXPECT_EQ(w.detail.str(), "POSIX write lock; waiting for write");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5000}}));
  EXPECT_EQ(w.key, 77U);
}

TEST_F(FileLockTest, RangesFromTheCurrentPositionAndTheEndOfTheFile) {
  process_.proc_locks =
      "1: POSIX  ADVISORY  WRITE 5000 fe:00:77 200 204\n"
      "1: -> POSIX  ADVISORY  WRITE 4242 fe:00:77 200 204\n"
      "2: POSIX  ADVISORY  WRITE 5001 fe:00:77 990 EOF\n"
      "2: -> POSIX  ADVISORY  READ  4242 fe:00:77 990 EOF\n";
  auto w = waitOf(syscallLine(SYS_fcntl, {3, F_SETLKW, flockArgument(F_WRLCK, SEEK_CUR, 0, 5)}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5000}}));  // from fdinfo's pos 200
  w = waitOf(syscallLine(SYS_fcntl, {3, F_SETLKW, flockArgument(F_RDLCK, SEEK_END, -10, 0)}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5001}}));  // from the size, 1000
  EXPECT_EQ(w.name, "/srv/data [990-EOF]");
  EXPECT_EQ(w.detail.str(), "POSIX write lock; waiting for read");
}

TEST_F(FileLockTest, OfdAndFlockLocksBelongToWhoeverHoldsTheOpenFile) {
  process_.proc_locks =
      "1: OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"
      "1: -> OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"
      "2: FLOCK  ADVISORY  WRITE 5000 fe:00:77 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 4242 fe:00:77 0 EOF\n";
  process_.held = {{Pid{5000}, "/srv/data",
                    "pos:\t0\nflags:\t02\nlock:\t2: FLOCK  ADVISORY  WRITE 5000 fe:00:77 0 EOF\n"},
                   {Pid{5100}, "/srv/data",
                    "pos:\t0\nflags:\t02\nlock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:77 0 9\n"},
                   {Pid{5200}, "/srv/data", "pos:\t0\nflags:\t02\n"}};
  auto w = waitOf(
      syscallLine(SYS_fcntl, {3, 38 /* F_OFD_SETLKW */, flockArgument(F_WRLCK, SEEK_SET, 0, 10)}));
  EXPECT_EQ(w.name, "/srv/data [0-9]");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5100}}));
  w = waitOf(syscallLine(SYS_flock, {3, LOCK_EX}));
  EXPECT_EQ(w.name, "/srv/data [0-EOF]");
  EXPECT_EQ(w.detail.str(), "FLOCK write lock; waiting for write");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{5000}}));
}

TEST_F(FileLockTest, ARequestMissingFromProcLocksOrAnUnreadableDescriptorIsSaid) {
  auto w = waitOf(syscallLine(SYS_flock, {3, LOCK_EX}));
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_EQ(w.name, "/srv/data");
  EXPECT_EQ(w.detail.str(), "the blocked request is not in /proc/locks");
  w = waitOf(syscallLine(SYS_flock, {9, LOCK_SH}));
  EXPECT_EQ(w.type, ObjectType::kFileLock);
  EXPECT_EQ(w.status, ObjectStatus::kError);
  EXPECT_EQ(w.name, "fd 9");
  // Another fcntl command does not block on a lock.
  w = waitOf(syscallLine(SYS_fcntl, {3, F_GETFL}));
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.name, "fcntl");
}

// --- pipes, FIFOs, sockets and other descriptors -------------------------------------------

TEST_F(WaitClassifierTest, APipeReaderWaitsOnTheWritersAndAWriterOnTheReaders) {
  process_.fd(5, "pipe:[555]", FdTarget::Kind::kPipe, 555);
  process_.held = {{Pid{4242}, "pipe:[555]", "flags:\t00\n"},
                   {Pid{6000}, "pipe:[555]", "flags:\t01\n"},
                   {Pid{6001}, "pipe:[555]", "flags:\t02000001\n"},
                   {Pid{6002}, "pipe:[556]", "flags:\t01\n"}};
  auto w = waitOf(syscallLine(SYS_read, {5, kArena, 1}));
  EXPECT_EQ(w.type, ObjectType::kPipe);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "pipe:[555]");
  EXPECT_EQ(w.key, 555U);
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{6000}, Pid{6001}}));
  EXPECT_EQ(w.detail.str(), "read on an empty pipe; the holders of its write end can end it");

  w = waitOf(syscallLine(SYS_writev, {5, kArena, 1}));
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{4242}}));
  EXPECT_EQ(w.detail.str(), "write to a full pipe; the holders of its read end can end it");

  process_.fd(6, "/tmp/fifo", FdTarget::Kind::kFifo, 600);
  w = waitOf(syscallLine(SYS_read, {6, kArena, 1}));
  EXPECT_EQ(w.type, ObjectType::kPipe);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);  // nobody can write
  EXPECT_TRUE(w.owner_processes.empty());
}

TEST_F(WaitClassifierTest, AConnectedUnixSocketWaitsOnThePeersHolders) {
  process_.fd(7, "socket:[777]", FdTarget::Kind::kSocket, 777);
  process_.unix_peers[777] = 778;
  process_.held = {{Pid{6100}, "socket:[778]", "flags:\t02\n"}};
  auto w = waitOf(syscallLine(SYS_recvfrom, {7, kArena, 16}));
  EXPECT_EQ(w.type, ObjectType::kUnixSocket);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "socket:[777] <-> socket:[778]");
  EXPECT_EQ(w.owner_processes, (std::vector<Pid>{Pid{6100}}));
  EXPECT_EQ(w.key, 777U);

  process_.fd(8, "socket:[888]", FdTarget::Kind::kSocket, 888);  // TCP: no Unix peer
  w = waitOf(syscallLine(SYS_sendto, {8, kArena, 16}));
  EXPECT_EQ(w.type, ObjectType::kSocketIo);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.detail.str(), "send on a socket");

  w = waitOf(syscallLine(SYS_accept4, {8, 0, 0}));
  EXPECT_EQ(w.type, ObjectType::kSocketIo);
  EXPECT_EQ(w.name, "socket:[888]");
  EXPECT_EQ(w.detail.str(), "accept");
  w = waitOf(syscallLine(SYS_connect, {11, 0, 0}));
  EXPECT_EQ(w.name, "fd 11");
  EXPECT_EQ(w.detail.str(), "connect");
}

TEST_F(WaitClassifierTest, EventTimerAndSignalDescriptorsAndUnreadableOnes) {
  process_.fd(3, "anon_inode:[eventfd]", FdTarget::Kind::kEventfd, 30);
  process_.fd(4, "anon_inode:[signalfd]", FdTarget::Kind::kSignalfd, 40);
  process_.fd(5, "anon_inode:[timerfd]", FdTarget::Kind::kTimerfd, 50);
  process_.fd(6, "/dev/ttyS0", FdTarget::Kind::kFile, 60);
  EXPECT_EQ(waitOf(syscallLine(SYS_read, {3})).type, ObjectType::kEventfd);
  EXPECT_EQ(waitOf(syscallLine(SYS_read, {4})).type, ObjectType::kSignalWait);
  EXPECT_EQ(waitOf(syscallLine(SYS_read, {5})).type, ObjectType::kSleep);
  auto w = waitOf(syscallLine(SYS_read, {6}));
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.name, "/dev/ttyS0");
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  w = waitOf(syscallLine(SYS_read, {12}));
  EXPECT_EQ(w.status, ObjectStatus::kError);
  EXPECT_EQ(w.name, "fd 12");
  EXPECT_EQ(w.detail.str(), "descriptor not readable");
}

TEST_F(WaitClassifierTest, OpeningAFifoWaitsForItsOtherEnd) {
  process_.placeString(kArena + 0xa00, "/run/app.fifo");
  process_.placeString(kArena + 0xb00, "relative.fifo");
  process_.fifos["-100:/run/app.fifo"] = 900;
  process_.fifos["9:relative.fifo"] = 901;
  auto w = waitOf(
      syscallLine(SYS_openat, {static_cast<std::uint64_t>(AT_FDCWD), kArena + 0xa00, O_RDONLY}));
  EXPECT_EQ(w.type, ObjectType::kFifoOpen);
  EXPECT_EQ(w.name, "/run/app.fifo");
  EXPECT_EQ(w.key, 900U);
  EXPECT_EQ(w.detail.str(), "opening a FIFO for reading: waits until a writer opens it");
  w = waitOf(syscallLine(SYS_openat, {9, kArena + 0xb00, O_WRONLY}));
  EXPECT_EQ(w.key, 901U);
  EXPECT_EQ(w.detail.str(), "opening a FIFO for writing: waits until a reader opens it");
  w = waitOf(syscallLine(SYS_open, {kArena + 0xa00, O_WRONLY}));
  EXPECT_EQ(w.type, ObjectType::kFifoOpen);

  w = waitOf(syscallLine(SYS_openat, {9, kArena + 0xa00, O_RDONLY}));  // not a FIFO from there
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.detail.str(), "blocked in open()");
  w = waitOf(syscallLine(SYS_open, {0x10, O_RDONLY}));
  EXPECT_EQ(w.name, "open");
  EXPECT_EQ(w.detail.str(), "blocked in open(); the path is not readable");
}

// --- sleeps, polls, signals ----------------------------------------------------------------

TEST_F(WaitClassifierTest, SleepsSayHowLongTheyHaveLeft) {
  process_.place(kArena + 0xc00, timespec{2, 500'000'000});
  auto w = waitOf(syscallLine(SYS_nanosleep, {kArena + 0xc00, 0}));
  EXPECT_EQ(w.type, ObjectType::kSleep);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "nanosleep");
  EXPECT_EQ(w.timeout, milliseconds(2500));

  w = waitOf(syscallLine(SYS_clock_nanosleep, {CLOCK_MONOTONIC, 0, kArena + 0xc00}));
  EXPECT_EQ(w.name, "clock_nanosleep");
  EXPECT_EQ(w.timeout, milliseconds(2500));
  process_.clocks[CLOCK_REALTIME] = std::chrono::milliseconds(1000);
  w = waitOf(syscallLine(SYS_clock_nanosleep, {CLOCK_REALTIME, TIMER_ABSTIME, kArena + 0xc00}));
  EXPECT_EQ(w.timeout, milliseconds(1500));
}

TEST_F(WaitClassifierTest, EventWaitsWithTheirTimeouts) {
  auto w = waitOf(syscallLine(SYS_poll, {kArena, 2, 1500}));
  EXPECT_EQ(w.type, ObjectType::kPoll);
  EXPECT_EQ(w.name, "event wait");
  EXPECT_EQ(w.timeout, milliseconds(1500));
  EXPECT_FALSE(waitOf(syscallLine(SYS_poll, {kArena, 2, 0xffffffff})).timeout.has_value());
  EXPECT_EQ(waitOf(syscallLine(SYS_epoll_wait, {4, kArena, 8, 250})).timeout, milliseconds(250));
  EXPECT_EQ(waitOf(syscallLine(SYS_epoll_pwait, {4, kArena, 8, 0})).timeout, milliseconds(0));
  for (const long nr : {SYS_select, SYS_pselect6, SYS_ppoll, SYS_epoll_pwait2}) {
    w = waitOf(syscallLine(nr, {1, 2, 3, 4}));
    EXPECT_EQ(w.type, ObjectType::kPoll) << nr;
    EXPECT_FALSE(w.timeout.has_value()) << nr;
  }
}

TEST_F(WaitClassifierTest, SignalWaitsAndSeveralFutexesAtOnce) {
  for (const long nr : {SYS_pause, SYS_rt_sigsuspend, SYS_rt_sigtimedwait}) {
    const auto w = waitOf(syscallLine(nr, {}));
    EXPECT_EQ(w.type, ObjectType::kSignalWait) << nr;
    EXPECT_EQ(w.name, "signal");
  }
  const auto w = waitOf(syscallLine(SYS_futex_waitv, {kArena, 2}));
  EXPECT_EQ(w.type, ObjectType::kFutex);
  EXPECT_EQ(w.name, "futex_waitv");
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
}

// --- states: stopped, uninterruptible, outside a system call, unknown calls ----------------

TEST_F(WaitClassifierTest, AStoppedThreadWaitsForSigcontAndSaysWhatItWasIn) {
  process_.fd(5, "pipe:[555]", FdTarget::Kind::kPipe, 555);
  auto w = waitOf(syscallLine(SYS_read, {5}), 'T');
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "stopped");
  EXPECT_EQ(w.detail.str(), "stopped by a signal; SIGCONT resumes it; it was in: Pipe pipe:[555]");
  EXPECT_EQ(w.key, 555U);  // the object it was in, to compare two reads by
  EXPECT_FALSE(w.alertable);

  w = waitOf(syscallLine(SYS_read, {5}), 't');
  EXPECT_EQ(w.name, "tracing stop");
  EXPECT_EQ(w.detail.str(), "stopped by a tracer; it was in: Pipe pipe:[555]");

  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2), 'T');
  EXPECT_EQ(w.name, "stopped");
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_EQ(w.key, kArena + 0x100);

  w = waitOf("-1 0x7ffd1 0x7f2\n", 'T');  // stopped outside a system call
  EXPECT_EQ(w.name, "stopped");
  EXPECT_EQ(w.detail.str(), "stopped by a signal; SIGCONT resumes it");
}

TEST_F(WaitClassifierTest, AThreadHeldAMomentByOurOwnCaptureIsStillInItsWait) {
  // A tracing stop of this process's own capture (registers read, then let go in the same call)
  // changes nothing: a deadlock it is in must not look broken, nor its waiters hung.
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  m.__data.__lock = 2;
  m.__data.__owner = kOwner;
  process_.place(kArena + 0x100, m);
  process_.held_by_us.insert(kWaiter);
  std::vector<TaskReading> threads{
      sleeping(kWaiter, futex(kArena + 0x100, kFutexWaitPrivate, 2), 't')};
  classifyWaits(kPid, threads, process_);
  ASSERT_TRUE(threads[0].sample.wait.has_value());
  const auto& w = *threads[0].sample.wait;
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{kPid, Tid{kOwner}}}));
  EXPECT_EQ(threads[0].sample.state, RunState::kSleeping);

  // Another tracer's stop (gdb) is a stop: the chain ends there.
  process_.held_by_us.clear();
  EXPECT_EQ(waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2), 't').name, "tracing stop");
}

TEST_F(WaitClassifierTest, KernelWaitsAreNamedByTheirWaitChannel) {
  auto w = waitOf(syscallLine(SYS_fsync, {3}), 'D', "io_schedule");
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.name, "io_schedule");
  EXPECT_EQ(w.detail.str(), "uninterruptible sleep (D) in syscall 74");
  EXPECT_FALSE(w.alertable);  // D: no signal interrupts it

  // Uninterruptible in a futex call too: not a lock wait.
  w = waitOf(futex(kArena + 0x100, kFutexWaitPrivate, 2), 'D');
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.name, "uninterruptible");

  w = waitOf("-1 0x7ffd1 0x7f2\n", 'D', "");
  EXPECT_EQ(w.detail.str(), "uninterruptible sleep (D) outside a syscall");
  w = waitOf("-1 0x7ffd1 0x7f2\n", 'S', "do_signal_stop");
  EXPECT_EQ(w.name, "do_signal_stop");
  EXPECT_EQ(w.detail.str(), "sleeping outside a syscall");
  EXPECT_TRUE(w.alertable);
  EXPECT_EQ(waitOf("-1 0x7ffd1 0x7f2\n").name, "kernel");
}

TEST_F(WaitClassifierTest, ASystemCallWctmonDoesNotModelIsNamed) {
  auto w = waitOf(syscallLine(SYS_mq_timedreceive, {3}));
  EXPECT_EQ(w.type, ObjectType::kUnknown);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
  EXPECT_EQ(w.name, "mq_timedreceive");
  EXPECT_EQ(w.detail.str(), "blocked in a system call wctmon does not model");
  EXPECT_EQ(waitOf(syscallLine(4000, {})).name, "syscall 4000");
}

TEST(KernelThreadWait, IsNamedByItsWaitChannel) {
  EXPECT_EQ(kernelThreadWait("kthreadd").name, "kthreadd");
  EXPECT_EQ(kernelThreadWait("0").name, "kernel thread");
  EXPECT_EQ(kernelThreadWait("").name, "kernel thread");
  const auto w = kernelThreadWait("rcu_gp_kthread");
  EXPECT_EQ(w.type, ObjectType::kKernelWait);
  EXPECT_EQ(w.status, ObjectStatus::kBlocked);
}

}  // namespace
}  // namespace wctmon::linux_platform
