#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/ids.h"
#include "platform/linux/code_map.h"
#include "platform/linux/core_memory.h"
#include "platform/linux/core_notes.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// The lookups of a wait classification answered from a core: memory from the core and the
/// files it maps, call sites from those files' symbols, a parked thread's registers from its
/// NT_PRSTATUS. What a core does not hold (descriptors, file locks, sockets, children, other
/// processes) has no answer: nothing is guessed from the system the core is read on.
class CoreWaitLookup final : public WaitLookup {
 public:
  /// `taken_at` is when the core was written (its file's time): absolute timeouts are measured
  /// from it.
  CoreWaitLookup(const CoreProcess& process, CoreMemory& memory, const CodeMap& code,
                 std::chrono::system_clock::time_point taken_at);

  [[nodiscard]] MemoryAccess readMemory(std::uint64_t addr, std::span<std::byte> out) override {
    return memory_.read(addr, out);
  }
  [[nodiscard]] MemoryAccess readFutexWindows(std::span<const std::uint64_t> uaddrs,
                                              std::vector<FutexWindow>& out) override;
  [[nodiscard]] std::size_t readStack(std::uint64_t sp, std::span<std::byte> out) override {
    return memory_.readAvailable(sp, out);
  }
  [[nodiscard]] const CallSite* callSiteAt(std::uint64_t address) override {
    return code_.siteAt(address);
  }
  [[nodiscard]] bool mayRefine() override { return code_.hasRefiners(); }
  [[nodiscard]] std::vector<std::uint64_t> parkedThreadRegisters(std::int32_t tid,
                                                                 std::uint64_t parked_on) override;
  [[nodiscard]] const PythonState* pythonState() override;
  [[nodiscard]] std::optional<std::string> readString(std::uint64_t addr) override {
    return memory_.readString(addr);
  }
  [[nodiscard]] std::optional<FdTarget> fdTarget(int /*fd*/) override { return std::nullopt; }
  [[nodiscard]] std::optional<std::uint64_t> fdPosition(int /*fd*/) override {
    return std::nullopt;
  }
  [[nodiscard]] std::optional<std::uint64_t> fileSize(int /*fd*/) override { return std::nullopt; }
  [[nodiscard]] std::optional<std::uint64_t> fifoInode(int /*dirfd*/,
                                                       const std::string& /*path*/) override {
    return std::nullopt;
  }
  [[nodiscard]] bool hasThread(std::int32_t tid) override { return registers_.contains(tid); }
  [[nodiscard]] std::vector<Pid> children() override { return {}; }
  [[nodiscard]] std::optional<StatFields> processStat(Pid pid) override;
  [[nodiscard]] bool heldByUs(std::int32_t /*tid*/) override { return false; }
  [[nodiscard]] std::optional<Pid> tracerOf(std::int32_t /*tid*/) override { return std::nullopt; }
  [[nodiscard]] std::optional<std::int32_t> semaphoreLastPid(int /*semid*/, int /*num*/) override {
    return std::nullopt;
  }
  [[nodiscard]] std::optional<Pid> processOfThread(std::int32_t tid) override {
    return hasThread(tid) ? std::optional(pid_) : std::nullopt;
  }
  /// A core numbers its threads as the process did; no other process is in it.
  [[nodiscard]] std::optional<std::int32_t> hostTid(std::int32_t tid) override { return tid; }
  [[nodiscard]] bool sharesMemoryAt(Pid /*other*/, std::uint64_t /*uaddr*/) override {
    return false;
  }
  [[nodiscard]] const std::vector<LockEntry>& locks() override { return no_locks_; }
  [[nodiscard]] FdHolders& fdHolders() override { return no_holders_; }
  [[nodiscard]] std::optional<std::uint64_t> unixPeer(std::uint64_t /*inode*/) override {
    return std::nullopt;
  }
  [[nodiscard]] std::chrono::nanoseconds now(clockid_t clock) override;

 private:
  /// Knows no holder of anything: a core lists no descriptors.
  class NoHolders final : public FdHolders {
   public:
    [[nodiscard]] std::vector<Pid> holders(const FdTarget& /*target*/, Access /*access*/) override {
      return {};
    }
    [[nodiscard]] std::vector<Pid> lockHolders(const FdTarget& /*target*/,
                                               const LockEntry& /*lock*/) override {
      return {};
    }
  };

  Pid pid_;
  std::int32_t ppid_ = 0;
  CoreMemory& memory_;
  const CodeMap& code_;
  std::chrono::system_clock::duration age_;
  std::map<std::int32_t, std::vector<std::uint64_t>> registers_;
  std::optional<std::optional<PythonState>> python_;
  std::vector<LockEntry> no_locks_;
  NoHolders no_holders_;
};

}  // namespace wctmon::linux_platform
