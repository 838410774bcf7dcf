// What the files of the wait classifier share, and nothing outside them uses: a wait with no
// owner to follow, a timeout read from the process's memory, and how much of a waiter's stack
// is read for the function it waits through. Defined in wait_classifier.cpp.
#pragma once

#include <time.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "model/snapshot.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {

/// How much of a futex waiter's stack is searched for the function it waits through (or for
/// the object it waits on).
inline constexpr std::size_t kStackScanBytes = 1024;
/// How much of it is read first.
inline constexpr std::size_t kFirstStackBytes = 256;

/// The fcntl commands that wait for a file lock: F_SETLKW (== F_SETLKW64 on 64-bit), F_OFD_SETLKW.
inline constexpr int kFSetLkw = 7;
inline constexpr int kFOfdSetLkw = 38;

/// A blocked wait on an object nobody owns, keyed by its name.
[[nodiscard]] WaitObject noOwner(ObjectType type, std::string name, std::string detail);

/// A timeout the process passes in a `struct timespec` at `addr`: relative, or absolute on
/// `clock` (then what is left of it now). nullopt for none (a null pointer, unreadable memory,
/// a value no kernel would accept).
[[nodiscard]] std::optional<std::chrono::milliseconds> timeoutAt(WaitLookup& lookup,
                                                                 std::uint64_t addr, bool absolute,
                                                                 clockid_t clock);

}  // namespace wctmon::linux_platform
