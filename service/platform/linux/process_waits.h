// Waits that another process ends: for a child to change state (wait4, waitid), owned by the
// children that can end it, and on a SysV semaphore set (semop), which records no owner, only
// the process that last operated on each semaphore.
#pragma once

#include <cstdint>

#include "model/ids.h"
#include "model/snapshot.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// `wait4(pid_arg, ...)` by process `self`: > 0 one child, -1 any child, 0 its own process
/// group, < -1 the process group -pid_arg. Owned by the children that can end it.
[[nodiscard]] WaitObject wait4Wait(Pid self, WaitLookup& lookup, std::int32_t pid_arg);

/// `waitid(idtype, id, ...)` by process `self` (P_ALL, P_PID, P_PGID).
[[nodiscard]] WaitObject waitidWait(Pid self, WaitLookup& lookup, int idtype, std::int32_t id);

/// semop()/semtimedop() on SysV semaphore set `semid` with the `nsops` operations at `sops`:
/// which semaphores of the set it waits on (those it takes or waits for zero on), and which
/// process last operated on each.
[[nodiscard]] WaitObject sysvSemaphoreWait(WaitLookup& lookup, int semid, std::uint64_t sops,
                                           std::uint64_t nsops);

}  // namespace wctmon::linux_platform
