#pragma once

#include <optional>
#include <vector>

#include "core/ports/dump_reader.h"
#include "model/result.h"
#include "model/snapshot.h"
#include "platform/linux/core_notes.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {

/// What a core cannot tell of a wait, said in its node: the holders of a pipe, a socket or a
/// file lock, a process's children, a semaphore's last user.
inline constexpr std::string_view kNotKnowableFromCore = "not knowable from a core";

/// The wait of a thread of a core in system call `sc` when its owners are found only in the
/// system's tables (descriptors, file locks, children, SysV semaphores), which a core does not
/// hold: a node that says so. nullopt for any other call, which the core's memory explains.
[[nodiscard]] std::optional<WaitObject> waitNotKnowableFromCore(const SyscallState& sc);

/// Reads a core (x86-64 ELF, from the kernel, gcore, systemd-coredump or wctmon dump) into a
/// snapshot of its process: each thread's system call from its registers, the owners of the
/// locks it waits on from the core's memory, call sites from the files the core maps, with
/// `what.executable` standing for the core's executable when given.
[[nodiscard]] Result<Snapshot> readCoreSnapshot(const DumpToRead& what);

/// The DumpReader of Linux: readCoreSnapshot.
class CoreReader final : public DumpReader {
 public:
  [[nodiscard]] Result<Snapshot> read(const DumpToRead& what) override {
    return readCoreSnapshot(what);
  }
};

}  // namespace wctmon::linux_platform
