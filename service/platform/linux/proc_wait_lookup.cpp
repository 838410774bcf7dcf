#include "platform/linux/proc_wait_lookup.h"

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "platform/linux/core_notes.h"
#include "platform/linux/process_memory.h"
#include "platform/linux/ptrace_stop.h"

namespace wctmon::linux_platform {

const std::vector<LockEntry>& SampleContext::locks() {
  if (!locks_) {
    // Read to its end: /proc/locks gives a page per read, and what lies past the first page
    // (past some 60 locks) was missing, the waits there unresolved ("not in /proc/locks").
    constexpr std::size_t kMostLockText = 64 << 20;
    const auto text = readWholeFile("/proc/locks", kMostLockText);
    locks_ = text ? parseLocks(*text) : std::vector<LockEntry>{};
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

std::uint64_t SampleContext::ownPidNamespace() {
  if (!own_namespace_) {
    struct stat st {};
    own_namespace_ = ::stat("/proc/self/ns/pid", &st) == 0 ? st.st_ino : 0;
  }
  return *own_namespace_;
}

std::uint64_t SampleContext::pidNamespaceOf(Pid pid) {
  if (auto it = namespace_of_.find(pid.value); it != namespace_of_.end()) return it->second;
  struct stat st {};
  const std::uint64_t ns =
      ::stat(procPath(pid, "ns/pid").c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
  namespace_of_.emplace(pid.value, ns);
  return ns;
}

void SampleContext::readNamespaceThreads(Namespace& ns, Pid pid) {
  if (!ns.processes_read.insert(pid.value).second) return;
  UniqueFd task_fd(::open(procPath(pid, "task").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return;
  for (const auto& [inner, host] : namespaceTids(task_fd.get())) ns.host_of.emplace(inner, host);
}

std::optional<std::int32_t> SampleContext::hostTid(std::uint64_t ns_id, Pid pid, std::int32_t tid) {
  auto& ns = namespaces_[ns_id];
  const auto found = [&]() -> std::optional<std::int32_t> {
    if (auto it = ns.host_of.find(tid); it != ns.host_of.end()) return it->second;
    return std::nullopt;
  };
  readNamespaceThreads(ns, pid);
  if (auto host = found()) return host;
  if (!ns.all_read) {
    // A process-shared lock's owner may be another process of the namespace (a container's).
    ns.all_read = true;
    const UniqueFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    // /proc lists processes as task directories list threads: by number.
    for (const auto other : proc.valid() ? listTasks(proc.get()) : std::vector<std::int32_t>{}) {
      if (pidNamespaceOf(Pid{other}) == ns_id) readNamespaceThreads(ns, Pid{other});
    }
  }
  return found();
}

std::optional<std::int32_t> ProcWaitLookup::hostTid(std::int32_t tid) {
  if (tid <= 0) return std::nullopt;
  const auto ns = context_.pidNamespaceOf(pid_);
  if (ns == 0 || ns == context_.ownPidNamespace()) return tid;
  return context_.hostTid(ns, pid_, tid);
}

namespace {

/// The shared mapping of the maps text `maps` that holds `uaddr`, and where in its file (or
/// shared memory) that address is.
struct SharedPlace {
  std::uint64_t inode = 0;
  std::string path;
  std::uint64_t offset = 0;
};

std::optional<SharedPlace> sharedPlaceOf(std::string_view maps, std::uint64_t uaddr) {
  std::optional<SharedPlace> out;
  forEachMapsRange(maps, [&](const MapsRange& range) {
    if (uaddr < range.begin || uaddr >= range.end) return true;
    if (range.shared && range.inode != 0) {
      out = SharedPlace{range.inode, std::string(range.path), range.offset + (uaddr - range.begin)};
    }
    return false;
  });
  return out;
}

/// Whether the maps text `maps` maps the place `place`.
bool mapsPlace(std::string_view maps, const SharedPlace& place) {
  bool found = false;
  forEachMapsRange(maps, [&](const MapsRange& range) {
    found = range.shared && range.inode == place.inode && range.path == place.path &&
            place.offset >= range.offset && place.offset < range.offset + (range.end - range.begin);
    return !found;
  });
  return found;
}

}  // namespace

const std::string& SampleContext::mapsOf(Pid pid) {
  if (auto it = maps_.find(pid.value); it != maps_.end()) return it->second;
  const UniqueFd fd(::open(procPath(liveTaskOf(pid), "maps").c_str(), O_RDONLY | O_CLOEXEC));
  return maps_.emplace(pid.value, fd.valid() ? readAll(fd.get(), std::size_t{64} << 20) : "")
      .first->second;
}

bool ProcWaitLookup::sharesMemoryAt(Pid other, std::uint64_t uaddr) {
  if (other == pid_) return true;
  // A lock two processes share lives in memory both map shared: a file, or shared anonymous or
  // System V memory, each with an inode. A word in private memory names no other process's
  // thread, whatever it says.
  const auto place = sharedPlaceOf(context_.mapsOf(pid_), uaddr);
  return place && mapsPlace(context_.mapsOf(other), *place);
}

std::size_t ProcWaitLookup::readStack(std::uint64_t sp, std::span<std::byte> out) {
  const auto it = std::lower_bound(stacks_.begin(), stacks_.end(), sp,
                                   [](const auto& s, std::uint64_t v) { return s.first < v; });
  if (it != stacks_.end() && it->first == sp && stack_bytes_ >= out.size()) {
    std::memcpy(out.data(), stack_data_.data() + it->second, out.size());
    return out.size();
  }
  return readAvailable(pid_, sp, out);
}

void ProcWaitLookup::prefetchStacks(std::span<const std::uint64_t> sps, std::size_t bytes) {
  std::vector<std::uint64_t> addrs(sps.begin(), sps.end());
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  stack_bytes_ = bytes;
  stack_data_.resize(addrs.size() * bytes);
  std::vector<std::span<std::byte>> outs;
  outs.reserve(addrs.size());
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    outs.emplace_back(stack_data_.data() + i * bytes, bytes);
  }
  const auto read = readAvailableBatch(pid_, addrs, outs);
  // What could not be read whole is left out: readStack reads it on its own.
  stacks_.clear();
  stacks_.reserve(addrs.size());
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    if (read[i] == bytes) stacks_.emplace_back(addrs[i], i * bytes);
  }
}

const CallSite* ProcWaitLookup::callSiteAt(std::uint64_t address) {
  if (!code_) code_ = CodeMap::recent(pid_, start_time_);
  return code_->siteAt(address);
}

bool ProcWaitLookup::mayRefine() {
  if (!code_) code_ = CodeMap::recent(pid_, start_time_);
  return code_->hasRefiners();
}

namespace {

/// Registers read of parked threads, by process, thread and the stack word each is parked on: a
/// thread parked for good is stopped once, not at every sample (and not again by the re-read
/// that confirms the sample). Bounded; started afresh when full.
class ParkedRegisters {
 public:
  using Key = std::tuple<std::int32_t, std::int32_t, std::uint64_t>;
  std::optional<std::vector<std::uint64_t>> find(const Key& key) {
    std::lock_guard lock(mutex_);
    auto it = known_.find(key);
    return it == known_.end() ? std::nullopt : std::optional(it->second);
  }
  void add(const Key& key, std::vector<std::uint64_t> registers) {
    std::lock_guard lock(mutex_);
    if (known_.size() >= 1024) known_.clear();
    known_[key] = std::move(registers);
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::vector<std::uint64_t>> known_;
};

ParkedRegisters& parkedRegisters() {
  static ParkedRegisters cache;
  return cache;
}

/// Waits (a few milliseconds at most) until thread `tid` sleeps again after a stop: it runs once
/// to restart its call, and a run count read before that would say it moved on.
void awaitAsleep(int task_fd, std::int32_t tid) {
  const auto path = std::to_string(tid) + "/stat";
  std::array<char, 512> buf{};
  for (int i = 0; i < 100; ++i) {
    const long n = readSmallFile(task_fd, path.c_str(), buf);
    if (n <= 0) return;
    const auto stat = parseStat(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    if (stat && stat->state == RunState::kSleeping) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

std::vector<std::uint64_t> ProcWaitLookup::parkedThreadRegisters(std::int32_t tid,
                                                                 std::uint64_t parked_on) {
  const ParkedRegisters::Key key{pid_.value, tid, parked_on};
  if (auto known = parkedRegisters().find(key)) return *known;
  // The thread waits in a futex call without a timeout, which the kernel restarts unchanged
  // after the stop: holding it changes nothing it sees.
  std::vector<std::uint64_t> out;
  {
    PtraceStop stop(tid);
    if (!stop.stop().empty()) return {};
    user_regs_struct regs{};
    if (::ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return {};
    out = parkedRegisterValues(regs);
  }
  awaitAsleep(task_fd_, tid);
  parkedRegisters().add(key, out);
  return out;
}

const PythonState* ProcWaitLookup::pythonState() {
  if (!python_) {
    (void)mayRefine();  // reads the code map when no call site has yet
    const MemoryReader read = [this](std::uint64_t addr, std::span<std::byte> out) {
      return linux_platform::readMemory(pid_, addr, out) == MemoryAccess::kOk;
    };
    python_.emplace(readPythonStateIfAny(code_->pythonAnchors(), read,
                                         [this](std::int32_t tid) { return hasThread(tid); }));
  }
  return *python_ ? &**python_ : nullptr;
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

std::optional<Pid> ProcWaitLookup::tracerOf(std::int32_t tid) {
  // The tracer is a thread (a worker of ours, a debugger's); its process is what tells.
  const auto tracer = readStatusField(task_fd_, std::to_string(tid) + "/status", "TracerPid");
  if (!tracer || *tracer <= 0) return std::nullopt;
  return context_.processOfThread(static_cast<std::int32_t>(*tracer));
}

std::optional<std::int32_t> ProcWaitLookup::semaphoreLastPid(int semid, int num) {
  // A semaphore id means something only in the process's IPC namespace: asked from ours, it is
  // answered only when the two are the same.
  struct stat theirs {};
  struct stat ours {};
  const auto path = "/proc/" + std::to_string(pid_.value) + "/ns/ipc";
  if (::stat(path.c_str(), &theirs) != 0 || ::stat("/proc/self/ns/ipc", &ours) != 0 ||
      theirs.st_ino != ours.st_ino || theirs.st_dev != ours.st_dev) {
    return std::nullopt;
  }
  const int last = ::semctl(semid, num, GETPID);
  return last > 0 ? std::optional(last) : std::nullopt;
}

bool ProcWaitLookup::heldByUs(std::int32_t tid) {
  const auto tracer = tracerOf(tid);
  return tracer && tracer->value == ::getpid();
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
