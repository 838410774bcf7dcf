// Waits another process ends: a parent waiting for its children (wait4, waitid), and a SysV
// semaphore wait (semop), described with the process that last operated on each semaphore.
#include "platform/linux/process_waits.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "platform/linux/wait_classifier_internal.h"

namespace wctmon::linux_platform {
namespace {

constexpr int kPAll = 0;  // waitid idtypes
constexpr int kPPid = 1;
constexpr int kPPgid = 2;

std::optional<std::int32_t> processGroup(WaitLookup& lookup, Pid pid) {
  auto stat = lookup.processStat(pid);
  return stat ? std::optional(stat->pgrp) : std::nullopt;
}

WaitObject processWait(Pid self, WaitLookup& lookup, std::int32_t id, int idtype) {
  // wait4's pid argument: > 0 one child, -1 any child, 0 or < -1 a process group.
  int kind = idtype;
  std::int32_t target = id;
  if (idtype == kPPid && id == -1) kind = kPAll;
  if (idtype == kPPid && id <= 0 && id != -1) {
    kind = kPPgid;
    // INT_MIN has no negation: the kernel refuses that wait (ESRCH), so it names no group.
    target = id == 0 ? processGroup(lookup, self).value_or(0)
             : id == std::numeric_limits<std::int32_t>::min() ? id
                                                              : -id;
  }
  WaitObject w;
  w.type = ObjectType::kProcessWait;
  for (const auto child : lookup.children()) {
    if (kind == kPAll || (kind == kPPid && child.value == target) ||
        (kind == kPPgid && processGroup(lookup, child) == target)) {
      w.owner_processes.push_back(child);
    }
  }
  w.name = kind == kPPid    ? "process " + std::to_string(target)
           : kind == kPPgid ? "process group " + std::to_string(target)
                            : "any child process";
  w.detail = std::to_string(w.owner_processes.size()) + " child process(es) can end this wait";
  w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
  w.key = static_cast<std::uint64_t>(static_cast<std::uint32_t>(target)) | (std::uint64_t{1} << 40);
  return w;
}

}  // namespace

WaitObject wait4Wait(Pid self, WaitLookup& lookup, std::int32_t pid_arg) {
  return processWait(self, lookup, pid_arg, kPPid);
}

WaitObject waitidWait(Pid self, WaitLookup& lookup, int idtype, std::int32_t id) {
  return processWait(self, lookup, id, idtype);
}

WaitObject sysvSemaphoreWait(WaitLookup& lookup, int semid, std::uint64_t sops,
                             std::uint64_t nsops) {
  struct Op {
    std::uint16_t num;
    std::int16_t op;
    std::int16_t flags;
  };
  static_assert(sizeof(Op) == 6, "struct sembuf");
  constexpr std::uint64_t kMaxOps = 16;
  std::array<Op, kMaxOps> ops{};
  const auto count = std::min(nsops, kMaxOps);
  std::vector<std::uint16_t> waited;
  if (lookup.readMemory(sops, std::as_writable_bytes(std::span(ops.data(), count))) ==
      MemoryAccess::kOk) {
    for (std::uint64_t i = 0; i < count; ++i) {
      if (ops[i].op <= 0 && std::find(waited.begin(), waited.end(), ops[i].num) == waited.end()) {
        waited.push_back(ops[i].num);
      }
    }
  }
  std::sort(waited.begin(), waited.end());
  std::string name = "SysV semaphore set " + std::to_string(semid);
  std::string last;
  if (!waited.empty()) {
    name += waited.size() == 1 ? ", semaphore " : ", semaphores ";
    for (std::size_t i = 0; i < waited.size(); ++i) {
      name += (i == 0 ? "" : i + 1 == waited.size() ? " and " : ", ") + std::to_string(waited[i]);
      if (const auto pid = lookup.semaphoreLastPid(semid, waited[i])) {
        last += (last.empty() ? "" : ", ") + std::string("semaphore ") + std::to_string(waited[i]) +
                " by pid " + std::to_string(*pid);
      }
    }
  }
  auto w = noOwner(ObjectType::kUnownedLock, name,
                   "a SysV semaphore records no owner" +
                       (last.empty() ? std::string() : "; last operated on: " + last));
  w.status = ObjectStatus::kUnknown;
  w.key = static_cast<std::uint64_t>(static_cast<std::uint32_t>(semid)) | (std::uint64_t{3} << 40);
  return w;
}

}  // namespace wctmon::linux_platform
