#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/result.h"
#include "os/unique_fd.h"
#include "platform/linux/core_notes.h"
#include "platform/linux/process_memory.h"
#include "wire/elf_core.h"

namespace wctmon::linux_platform {

/// The memory of a core's process: what its PT_LOAD segments hold, and for the file-backed
/// ranges the writer left out (code, read-only data: the kernel's default coredump_filter, gcore)
/// the files NT_FILE names, read where they are now.
class CoreMemory {
 public:
  /// Opens the core at `path`, whose headers are `core`, with the file mappings `files` (their
  /// paths as they are to be opened now). Fails when a segment lies past the end of the file
  /// (a core cut short).
  [[nodiscard]] static Result<CoreMemory> open(const std::filesystem::path& path,
                                               const wire::ElfCore& core,
                                               std::vector<CoreFileMapping> files);

  /// Reads `out.size()` bytes at `addr`: all of them, or kFault.
  [[nodiscard]] MemoryAccess read(std::uint64_t addr, std::span<std::byte> out);
  /// Reads up to `out.size()` bytes at `addr`: as many as the core or its files hold from there
  /// on without a gap.
  [[nodiscard]] std::size_t readAvailable(std::uint64_t addr, std::span<std::byte> out);
  /// The NUL-terminated string at `addr`, at most `max` bytes.
  [[nodiscard]] std::optional<std::string> readString(std::uint64_t addr, std::size_t max = 4096);

 private:
  struct Segment {
    std::uint64_t vaddr = 0;
    std::uint64_t memsz = 0;
    std::uint64_t offset = 0;
    std::uint64_t filesz = 0;
  };
  /// Bytes at `addr` from one place (a segment's part in the core, or a mapped file): how many.
  [[nodiscard]] std::size_t readSome(std::uint64_t addr, std::span<std::byte> out);
  [[nodiscard]] std::size_t readFromFile(const CoreFileMapping& file, std::uint64_t addr,
                                         std::span<std::byte> out);

  UniqueFd core_;
  std::vector<Segment> segments_;       // sorted by vaddr
  std::vector<CoreFileMapping> files_;  // sorted by begin
  /// The mapped files, opened on first read; an invalid descriptor for one that is gone.
  std::map<std::string, UniqueFd> opened_;
};

}  // namespace wctmon::linux_platform
