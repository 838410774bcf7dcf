#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "model/ids.h"
#include "platform/linux/code_map.h"
#include "platform/linux/fd_resolver.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// What the reads of one sample share: the system-wide indexes, built only when a wait needs
/// them (a pipe, socket or file lock) and at most once.
class SampleContext {
 public:
  /// With `shared_fds`, the table of every descriptor of the system is the one the samples of
  /// the moment share.
  explicit SampleContext(SharedFdLinks* shared_fds = nullptr) : fds_(shared_fds) {}

  [[nodiscard]] FdHolderIndex& fds() { return fds_; }
  [[nodiscard]] const std::vector<LockEntry>& locks();
  /// The process a thread id belongs to, from /proc/TID/status; nullopt when no such thread.
  [[nodiscard]] std::optional<Pid> processOfThread(std::int32_t tid);
  /// The PID namespace of process `pid` (the inode of /proc/PID/ns/pid); 0 when it cannot be read.
  [[nodiscard]] std::uint64_t pidNamespaceOf(Pid pid);
  /// The service's own PID namespace.
  [[nodiscard]] std::uint64_t ownPidNamespace();
  /// The thread that has the number `tid` in the PID namespace `ns`, which process `pid` is in,
  /// as the service numbers it: from the NSpid of the threads of `pid` first, then of every
  /// process of that namespace (read once per sample, and only when asked).
  [[nodiscard]] std::optional<std::int32_t> hostTid(std::uint64_t ns, Pid pid, std::int32_t tid);
  /// The maps of process `pid` (/proc/PID/maps), read once per sample; empty when unreadable.
  [[nodiscard]] const std::string& mapsOf(Pid pid);

 private:
  /// What is known of one PID namespace: its threads' numbers there and here.
  struct Namespace {
    std::unordered_map<std::int32_t, std::int32_t> host_of;
    std::unordered_set<std::int32_t> processes_read;
    bool all_read = false;
  };
  void readNamespaceThreads(Namespace& ns, Pid pid);

  FdHolderIndex fds_;
  std::optional<std::vector<LockEntry>> locks_;
  std::unordered_map<std::int32_t, std::optional<Pid>> tgid_cache_;
  std::optional<std::uint64_t> own_namespace_;
  std::unordered_map<std::int32_t, std::uint64_t> namespace_of_;
  std::unordered_map<std::uint64_t, Namespace> namespaces_;
  std::unordered_map<std::int32_t, std::string> maps_;
};

/// The lookups of a wait classification answered from /proc, process memory and sock_diag, for
/// process `pid` whose task directory is `task_fd` and threads `tasks`; what every process of a
/// sample shares comes from `context`.
class ProcWaitLookup final : public WaitLookup {
 public:
  /// `start_time` (0 when not known) lets the code map read by the sample serve the read that
  /// confirms it.
  ProcWaitLookup(SampleContext& context, Pid pid, int task_fd, TaskList& tasks,
                 std::uint64_t start_time = 0)
      : context_(context), pid_(pid), task_fd_(task_fd), tasks_(tasks), start_time_(start_time) {}

  [[nodiscard]] MemoryAccess readMemory(std::uint64_t addr, std::span<std::byte> out) override;
  [[nodiscard]] MemoryAccess readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                              std::vector<FutexWindow>& out) override;
  [[nodiscard]] std::size_t readStack(std::uint64_t sp, std::span<std::byte> out) override;
  void prefetchStacks(std::span<const std::uint64_t> sps, std::size_t bytes) override;
  [[nodiscard]] const CallSite* callSiteAt(std::uint64_t address) override;
  [[nodiscard]] bool mayRefine() override;
  [[nodiscard]] std::vector<std::uint64_t> parkedThreadRegisters(std::int32_t tid,
                                                                 std::uint64_t parked_on) override;
  [[nodiscard]] const PythonState* pythonState() override;
  [[nodiscard]] std::optional<std::string> readString(std::uint64_t addr) override;
  [[nodiscard]] std::optional<FdTarget> fdTarget(int fd) override;
  [[nodiscard]] std::optional<std::uint64_t> fdPosition(int fd) override;
  [[nodiscard]] std::optional<std::uint64_t> fileSize(int fd) override;
  [[nodiscard]] std::optional<std::uint64_t> fifoInode(int dirfd, const std::string& path) override;
  [[nodiscard]] bool hasThread(std::int32_t tid) override { return tasks_.contains(tid); }
  [[nodiscard]] std::vector<Pid> children() override;
  [[nodiscard]] std::optional<StatFields> processStat(Pid pid) override;
  [[nodiscard]] bool heldByUs(std::int32_t tid) override;
  [[nodiscard]] std::optional<Pid> tracerOf(std::int32_t tid) override;
  [[nodiscard]] std::optional<std::int32_t> semaphoreLastPid(int semid, int num) override;
  [[nodiscard]] std::optional<Pid> processOfThread(std::int32_t tid) override {
    return context_.processOfThread(tid);
  }
  [[nodiscard]] std::optional<std::int32_t> hostTid(std::int32_t tid) override;
  [[nodiscard]] bool sharesMemoryAt(Pid other, std::uint64_t uaddr) override;
  [[nodiscard]] const std::vector<LockEntry>& locks() override { return context_.locks(); }
  [[nodiscard]] FdHolders& fdHolders() override { return context_.fds(); }
  [[nodiscard]] std::optional<std::uint64_t> unixPeer(std::uint64_t inode) override;
  [[nodiscard]] std::chrono::nanoseconds now(clockid_t clock) override;

 private:
  SampleContext& context_;
  Pid pid_;
  int task_fd_;
  TaskList& tasks_;
  /// Read on the first call site asked for: most processes have no futex waiter to explain.
  std::uint64_t start_time_ = 0;
  std::shared_ptr<const CodeMap> code_;
  /// Stacks read ahead, sorted by sp: each sp with where its stack_bytes_ bytes (read whole)
  /// start in stack_data_, one block for all of them.
  std::vector<std::pair<std::uint64_t, std::size_t>> stacks_;
  std::vector<std::byte> stack_data_;
  std::size_t stack_bytes_ = 0;
  /// The CPython interpreter's state, once asked for; empty inside when the process has none.
  std::optional<std::optional<PythonState>> python_;
};

}  // namespace wctmon::linux_platform
