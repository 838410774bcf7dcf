#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/ids.h"
#include "model/shared_text.h"
#include "model/wait_model.h"

namespace wctmon {

/// Scheduler state of a thread as the platform reports it.
enum class RunState {
  kRunning,
  kSleeping,
  kDiskSleep,
  kStopped,
  kTraced,
  kZombie,
  kDead,
  kIdle,
  kUnknown
};

/// What a blocked thread waits on, with its owners already resolved by the platform.
struct WaitObject {
  ObjectType type = ObjectType::kUnknown;
  /// Owned, NotOwned, Abandoned, Unknown (owner cannot be known), Blocked (the kind has no owner),
  /// NoAccess.
  ObjectStatus status = ObjectStatus::kUnknown;
  /// Shared, as the detail: waits are copied at every sample of every watched thread, and a
  /// name with its kind ("pthread_cond_wait 0x…") is too long to be copied without allocating.
  SharedText name;
  SharedText detail;
  std::optional<std::chrono::milliseconds> timeout;
  bool alertable = false;
  /// Threads that hold the object (a lock's owner, the joined thread).
  std::vector<ThreadRef> owner_threads;
  /// Processes that hold it when ownership is per process; any of their threads may release it.
  std::vector<Pid> owner_processes;
  /// Identity of the object (address, inode, ...) used to compare two reads of the same wait.
  std::uint64_t key = 0;

  friend bool operator==(const WaitObject&, const WaitObject&) = default;
};

/// One thread as read at one moment.
struct ThreadSample {
  ThreadRef id;
  std::string name;
  RunState state = RunState::kUnknown;
  /// Running, Blocked, NoAccess (wait not readable) or Error (the thread vanished mid-read).
  ObjectStatus status = ObjectStatus::kUnknown;
  /// Times scheduled in so far; read for the threads whose waits can form cycles.
  std::optional<std::uint64_t> context_switches;
  std::optional<std::chrono::milliseconds> wait_time;
  /// Time it has spent on a CPU so far, where the platform reads it with the sample (a busy
  /// thread is told by how fast this grows).
  std::optional<std::chrono::nanoseconds> cpu_time{};
  /// Time it has spent runnable in a run queue, waiting for a CPU, where the platform reads it
  /// (Linux): a thread that never sleeps is busy though a loaded machine gives it less than a
  /// core.
  std::optional<std::chrono::nanoseconds> queued_time{};
  std::optional<WaitObject> wait;
  /// The platform itself found the thread's chain to close a cycle (WCT's IsCycle); the core
  /// finds cycles on its own and says where the two differ.
  bool platform_cycle = false;
  /// Its frames in its runtime's language (Java), where the platform read them with the sample;
  /// evidence taken of the thread carries them.
  std::optional<RuntimeStack> runtime_stack{};
};

/// One process and its threads.
struct ProcessSample {
  Pid pid;
  std::string name;
  /// Start time in clock ticks since boot; with the pid it identifies the process across reuse.
  std::uint64_t start_time = 0;
  /// The title it gave itself by rewriting its command line; empty when it did not.
  std::string title{};
  std::vector<ThreadSample> threads;
  /// Its goroutines, when it is a Go program.
  std::optional<GoProgram> go{};
};

/// Every process a sample read. The processes asked for come first.
struct Snapshot {
  std::vector<ProcessSample> processes;
  std::vector<std::string> warnings;
};

/// The name a thread sample carries when the thread exited while it was read.
inline constexpr std::string_view kExitedThreadName = "(exited)";

/// Whether the thread exited while it was read (it is simply no longer there; not an error).
[[nodiscard]] inline bool isExited(const ThreadSample& t) {
  return t.status == ObjectStatus::kError && t.name == kExitedThreadName;
}

/// True when two reads show the same object with the same owners; the time a timed wait has
/// left is not compared (it shrinks between reads).
[[nodiscard]] bool sameWaitObject(const WaitObject& a, const WaitObject& b);

/// True when two reads of a thread show the same wait on the same owners with no progress between.
[[nodiscard]] bool sameBlockedWait(const ThreadSample& before, const ThreadSample& after);

/// A thread's runtime stack, kept from its sample until its evidence is taken.
using RuntimeStackOf = std::pair<ThreadRef, RuntimeStack>;

/// The runtime stacks that `threads` carry for the threads of `wanted`.
[[nodiscard]] std::vector<RuntimeStackOf> runtimeStacksOf(std::span<const ThreadRef> wanted,
                                                          std::span<const ThreadSample> threads);

/// Gives each capture the runtime stack of its thread, where `stacks` has one.
void attachRuntimeStacks(std::vector<ThreadCapture>& captures,
                         std::span<const RuntimeStackOf> stacks);

}  // namespace wctmon
