#include "wire/elf_core.h"

#include <cstring>
#include <optional>
#include <string_view>

#include "wire/file_reader.h"

namespace wctmon::wire {
namespace {

/// The same reads as FileReader, from bytes in memory.
class BytesReader {
 public:
  explicit BytesReader(const std::string& bytes) : bytes_(bytes) {}
  [[nodiscard]] std::uint64_t size() const { return bytes_.size(); }
  [[nodiscard]] std::optional<std::string> bytes(std::uint64_t offset, std::uint64_t n) const {
    if (offset > bytes_.size() || n > bytes_.size() - offset) return std::nullopt;
    return bytes_.substr(offset, n);
  }
  template <typename T>
  [[nodiscard]] std::optional<T> at(std::uint64_t offset) const {
    return valueAt<T>(bytes(offset, sizeof(T)));
  }

 private:
  const std::string& bytes_;
};

Error cutShort(const std::string& name, const char* what) {
  return makeError(ErrorCode::kDamaged,
                   name + ": " + what + " is cut short or points outside the file");
}

/// Splits the notes of one PT_NOTE segment: header, owner name and data, each 4-byte aligned.
Result<bool> splitNotes(std::string_view notes, const std::string& name, ElfCore& out) {
  const auto align = [](std::uint64_t n) { return (n + 3) / 4 * 4; };
  for (std::size_t at = 0; at + 12 <= notes.size();) {
    std::uint32_t header[3];
    std::memcpy(header, notes.data() + at, sizeof header);
    const std::uint64_t name_at = at + 12;
    const std::uint64_t desc_at = name_at + align(header[0]);
    const std::uint64_t end = desc_at + align(header[1]);
    if (end > notes.size() || desc_at + header[1] > notes.size()) {
      return cutShort(name, "a note");
    }
    ElfNote note;
    // The owner's length counts its terminating NUL.
    note.name.assign(notes.data() + name_at, header[0] > 0 ? header[0] - 1 : 0);
    note.type = header[2];
    note.desc.assign(notes.data() + desc_at, header[1]);
    out.notes.push_back(std::move(note));
    at = end;
  }
  return true;
}

template <typename Reader>
Result<ElfCore> readCore(Reader& file, const std::string& name) {
  const auto magic = file.bytes(0, 4);
  if (!magic || *magic != std::string_view("\x7f"
                                           "ELF",
                                           4)) {
    // systemd-coredump keeps its cores compressed: say how to get at the core inside.
    const auto head = file.bytes(0, 6).value_or("");
    const bool compressed = head.starts_with("\x28\xb5\x2f\xfd") ||          // zstd
                            head.starts_with("\xfd\x37\x7a\x58\x5a\x00") ||  // xz
                            head.starts_with("\x04\x22\x4d\x18");            // lz4
    if (compressed) {
      return makeError(ErrorCode::kUnsupported,
                       name +
                           " is compressed (zstd, xz or lz4), as systemd-coredump keeps "
                           "cores: decompress it first (coredumpctl dump PID --output FILE)");
    }
    return makeError(ErrorCode::kUnsupported, name + " is no ELF file");
  }
  ElfCore out;
  out.file_size = file.size();
  const auto ident = file.bytes(0, 16);
  const auto type = file.template at<std::uint16_t>(16);
  const auto machine = file.template at<std::uint16_t>(18);
  if (!ident || !type || !machine || (*ident)[4] != 2 || (*ident)[5] != 1 || *type != 4) {
    return makeError(ErrorCode::kUnsupported,
                     name + " is an ELF file but no 64-bit little-endian core");
  }
  out.machine = *machine;
  const auto phoff = file.template at<std::uint64_t>(32);
  const auto phentsize = file.template at<std::uint16_t>(54);
  const auto phnum = file.template at<std::uint16_t>(56);
  if (!phoff || !phentsize || !phnum || *phentsize < 56) return cutShort(name, "the ELF header");
  // The table in one read: a core has a segment for every mapping, thousands with as many
  // threads' stacks.
  const auto raw_table = file.bytes(*phoff, std::uint64_t{*phnum} * *phentsize);
  if (!raw_table) return cutShort(name, "the program headers");
  const BytesReader table(*raw_table);
  for (std::uint16_t i = 0; i < *phnum; ++i) {
    const std::uint64_t ph = std::uint64_t{i} * *phentsize;
    const auto p_type = table.at<std::uint32_t>(ph);
    const auto flags = table.at<std::uint32_t>(ph + 4);
    const auto offset = table.at<std::uint64_t>(ph + 8);
    const auto vaddr = table.at<std::uint64_t>(ph + 16);
    const auto filesz = table.at<std::uint64_t>(ph + 32);
    const auto memsz = table.at<std::uint64_t>(ph + 40);
    if (!p_type || !flags || !offset || !vaddr || !filesz || !memsz) {
      return cutShort(name, "a program header");
    }
    if (*p_type == 1) {  // PT_LOAD
      out.loads.push_back(ElfLoad{*vaddr, *memsz, *offset, *filesz, *flags});
      continue;
    }
    if (*p_type != 4) continue;  // PT_NOTE
    const auto notes = file.bytes(*offset, *filesz);
    if (!notes) return cutShort(name, "the notes");
    auto split = splitNotes(*notes, name, out);
    if (!split) return split.error();
  }
  return out;
}

}  // namespace

Result<ElfCore> readElfCore(const std::filesystem::path& path) {
  FileReader file(path);
  if (!file.open()) return makeError(ErrorCode::kNotFound, "cannot read " + path.string());
  return readCore(file, path.string());
}

Result<ElfCore> parseElfCore(const std::string& bytes, const std::string& name) {
  BytesReader reader(bytes);
  return readCore(reader, name);
}

}  // namespace wctmon::wire
