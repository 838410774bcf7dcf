#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/snapshot.h"

namespace wctmon::linux_platform {

/// What a Go binary's symbol table says of its runtime: where its goroutine list, its names of
/// wait reasons and its version are, and its functions, to name frames by.
struct GoBinary {
  struct Function {
    std::uint64_t begin = 0;  // ELF virtual address
    std::uint64_t end = 0;
    std::string name;
  };
  /// ELF virtual addresses of runtime.allgs (a []*runtime.g), runtime.allglen,
  /// runtime.waitReasonStrings ([N]string) and runtime.buildVersion (a string); 0 when absent.
  std::uint64_t allgs = 0;
  std::uint64_t allglen = 0;
  std::uint64_t wait_reason_strings = 0;
  std::size_t wait_reason_count = 0;
  std::uint64_t build_version = 0;
  /// e_entry: with the process's AT_ENTRY, where the file is loaded.
  std::uint64_t entry = 0;
  /// The file has Go's build information (.go.buildinfo): a Go program, stripped or not.
  bool go = false;
  /// The Go version that section names ("go1.19.8"); empty when it keeps it elsewhere.
  std::string build_info_version;
  /// The file's name, as frames show their module.
  std::string module;
  std::vector<Function> functions;  // sorted, not overlapping

  /// Whether the symbols a goroutine list is read by are all there.
  [[nodiscard]] bool hasRuntime() const {
    return allgs != 0 && allglen != 0 && wait_reason_strings != 0 && build_version != 0;
  }
  /// The function at ELF virtual address `vaddr`; nullptr when none.
  [[nodiscard]] const Function* functionAt(std::uint64_t vaddr) const;
};

/// Reads the runtime symbols and functions of the ELF file open as `fd`; a file that is no Go
/// binary (or was stripped) comes back without them.
[[nodiscard]] GoBinary loadGoBinary(int fd);

/// The Go version in the contents of a .go.buildinfo section (Go 1.18 and later keep it inline
/// after the 32-byte header); empty when it is not there.
[[nodiscard]] std::string goBuildInfoVersion(std::span<const std::byte> section);

/// The offsets in runtime.g that goroutines are read by, for one Go version on amd64.
struct GoLayout {
  std::size_t g_size = 0;  // bytes read of each g
  std::size_t stack_lo = 0;
  std::size_t stack_hi = 0;
  std::size_t sched_pc = 0;
  std::size_t sched_bp = 0;
  std::size_t atomicstatus = 0;
  std::size_t goid = 0;
  std::size_t waitsince = 0;
  std::size_t waitreason = 0;
  std::size_t startpc = 0;
};

/// The layout of runtime.g for Go `version` (runtime.buildVersion); nullopt for a version whose
/// layout was not verified.
[[nodiscard]] std::optional<GoLayout> goLayoutOf(std::string_view version);

/// Reads a Go process's memory.
class GoMemory {
 public:
  virtual ~GoMemory() = default;
  /// Fills `out` from `addr`; false when it cannot be read whole.
  [[nodiscard]] virtual bool read(std::uint64_t addr, std::span<std::byte> out) = 0;
};

/// How much of a Go program is read: every loop and read is bounded.
struct GoReadLimits {
  std::size_t max_goroutines = 20000;
  std::size_t max_listed = 1000;
  std::size_t max_frames = 32;
};

/// What a goroutine waits on, named from its runtime's wait reason and its frames: Go before
/// 1.20 says "semacquire" for sync.Mutex, sync.RWMutex and sync.WaitGroup alike.
struct GoWait {
  std::string waits_on;
  bool lock = false;
};
[[nodiscard]] GoWait goWaitOf(std::string_view reason, std::span<const StackFrame> frames);

/// Reads the goroutines of a Go program from its memory as debuggers do, never stopping it:
/// runtime.allgs, each g's status, wait reason and saved registers, and its frames along the
/// frame pointers. `bias` is where the binary is loaded (runtime address minus ELF address);
/// `monotonic_now` is CLOCK_MONOTONIC now, the runtime's nanotime. A version or a memory that
/// does not read as expected makes a program whose goroutines are not visible, never a guess.
[[nodiscard]] GoProgram readGoProgram(const GoBinary& binary, std::uint64_t bias, GoMemory& memory,
                                      std::chrono::nanoseconds monotonic_now,
                                      const GoReadLimits& limits = {});

/// Whether `thread` is an OS thread of the Go runtime idle in its scheduler.
[[nodiscard]] bool isGoRuntimeThread(const ThreadSample& thread);

/// Gives `process` its goroutines when it is a Go program: some thread of it idles in the Go
/// runtime's scheduler, or (a stripped binary, whose call sites are not known) waits on a futex
/// and its executable has Go's build information. Reads its executable's symbols (once per
/// file), its load address and its memory. Any other process costs a look at its threads' waits
/// and, when one waits on a futex, a look at its executable's cached symbols.
void applyGoRuntime(ProcessSample& process);

}  // namespace wctmon::linux_platform
