// The headers and notes of an ELF core, from canned bytes.
#include "wire/elf_core.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace wctmon::wire {
namespace {

/// A core with one PT_NOTE (two notes) and one PT_LOAD.
std::string core() {
  std::string notes;
  const auto addNote = [&](const std::string& owner, std::uint32_t type, const std::string& desc) {
    const std::uint32_t header[3] = {static_cast<std::uint32_t>(owner.size() + 1),
                                     static_cast<std::uint32_t>(desc.size()), type};
    notes.append(reinterpret_cast<const char*>(header), sizeof header);
    notes += owner + '\0';
    notes.resize((notes.size() + 3) / 4 * 4, '\0');
    notes += desc;
    notes.resize((notes.size() + 3) / 4 * 4, '\0');
  };
  addNote("CORE", 1, "status");
  addNote("WCTMON", 0x57430001, "{\"x\":1}");
  Elf64_Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = ELFCLASS64;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_type = ET_CORE;
  ehdr.e_machine = EM_X86_64;
  ehdr.e_phoff = sizeof ehdr;
  ehdr.e_phentsize = sizeof(Elf64_Phdr);
  ehdr.e_phnum = 2;
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = sizeof ehdr + 2 * sizeof(Elf64_Phdr);
  note.p_filesz = notes.size();
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_X;
  load.p_vaddr = 0x400000;
  load.p_offset = note.p_offset + notes.size();
  load.p_filesz = 16;
  load.p_memsz = 0x1000;
  std::string out(reinterpret_cast<const char*>(&ehdr), sizeof ehdr);
  out.append(reinterpret_cast<const char*>(&note), sizeof note);
  out.append(reinterpret_cast<const char*>(&load), sizeof load);
  out += notes;
  out += std::string(16, 'm');
  return out;
}

TEST(ElfCore, HeadersSegmentsAndNotesAreRead) {
  const auto bytes = core();
  const auto parsed = parseElfCore(bytes, "core");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->machine, kElfMachineX86_64);
  EXPECT_EQ(parsed->file_size, bytes.size());
  ASSERT_EQ(parsed->loads.size(), 1U);
  EXPECT_EQ(parsed->loads[0].vaddr, 0x400000U);
  EXPECT_EQ(parsed->loads[0].filesz, 16U);
  EXPECT_EQ(parsed->loads[0].memsz, 0x1000U);
  EXPECT_EQ(parsed->loads[0].flags, static_cast<std::uint32_t>(PF_R | PF_X));
  ASSERT_EQ(parsed->notes.size(), 2U);
  EXPECT_EQ(parsed->notes[0].name, "CORE");
  EXPECT_EQ(parsed->notes[0].desc, "status");
  EXPECT_EQ(parsed->notes[1].name, "WCTMON");
  EXPECT_EQ(parsed->notes[1].desc, "{\"x\":1}");
}

TEST(ElfCore, AnythingElseOrACoreCutShortIsAnErrorThatSaysWhich) {
  const auto bytes = core();
  auto r = parseElfCore("not a core at all", "text");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no ELF file"), std::string::npos) << r.error().message;

  r = parseElfCore(std::string("\x28\xb5\x2f\xfd\x24\x00", 6) + "zstd frame", "core.zst");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is compressed"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("coredumpctl dump"), std::string::npos) << r.error().message;

  auto executable = bytes;
  executable[16] = ET_EXEC;
  r = parseElfCore(executable, "exe");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no 64-bit little-endian core"), std::string::npos);

  auto elf32 = bytes;
  elf32[EI_CLASS] = ELFCLASS32;
  EXPECT_FALSE(parseElfCore(elf32, "elf32"));

  // Cut inside the notes, and inside the program headers.
  for (const std::size_t size : {sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr) + 20,
                                 sizeof(Elf64_Ehdr) + 10, std::size_t{30}}) {
    r = parseElfCore(bytes.substr(0, size), "cut");
    ASSERT_FALSE(r) << size;
    EXPECT_EQ(r.error().code, ErrorCode::kDamaged) << size << ": " << r.error().message;
  }
  // A note whose size points past its segment.
  auto bad = bytes;
  const std::uint32_t huge = 1 << 30;
  std::memcpy(bad.data() + sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr) + 4, &huge, 4);
  r = parseElfCore(bad, "bad");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("a note"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace wctmon::wire
