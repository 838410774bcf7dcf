#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/result.h"

namespace wctmon::wire {

/// One note of an ELF core: its owner ("CORE", "LINUX", "WCTMON"), type and data.
struct ElfNote {
  std::string name;
  std::uint32_t type = 0;
  std::string desc;
};

/// One PT_LOAD segment of an ELF core: memory at `vaddr` of `memsz` bytes, of which the first
/// `filesz` are in the file at `offset` (the rest was left out by the writer).
struct ElfLoad {
  std::uint64_t vaddr = 0;
  std::uint64_t memsz = 0;
  std::uint64_t offset = 0;
  std::uint64_t filesz = 0;
  std::uint32_t flags = 0;  // PF_X 1, PF_W 2, PF_R 4
};

/// The headers and notes of an ELF64 little-endian core (e_type ET_CORE), as its writer laid
/// them out; the memory itself is not read.
struct ElfCore {
  std::uint16_t machine = 0;  // e_machine: 62 for x86-64
  std::uint64_t file_size = 0;
  std::vector<ElfLoad> loads;
  std::vector<ElfNote> notes;
};

/// The ELF machine number of x86-64.
inline constexpr std::uint16_t kElfMachineX86_64 = 62;

/// Reads the headers and notes of the ELF core at `path`. A file that is no ELF file, an ELF
/// file that is no 64-bit little-endian core, or one whose headers or notes are cut short, is an
/// error saying so (kNotFound when it cannot be read at all).
[[nodiscard]] Result<ElfCore> readElfCore(const std::filesystem::path& path);

/// The same, from bytes in memory (`name` names them in errors).
[[nodiscard]] Result<ElfCore> parseElfCore(const std::string& bytes, const std::string& name);

}  // namespace wctmon::wire
