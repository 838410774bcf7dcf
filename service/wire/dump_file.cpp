#include "wire/dump_file.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "model/dump_format.h"

namespace wctmon::wire {
namespace {

/// Reads little-endian integers at offsets of a file, each checked against its size.
class FileReader {
 public:
  explicit FileReader(const std::filesystem::path& path) : in_(path, std::ios::binary) {
    if (in_) {
      in_.seekg(0, std::ios::end);
      size_ = static_cast<std::uint64_t>(in_.tellg());
    }
  }
  [[nodiscard]] bool open() const { return static_cast<bool>(in_); }

  [[nodiscard]] std::optional<std::string> bytes(std::uint64_t offset, std::uint64_t n) {
    if (offset > size_ || n > size_ - offset) return std::nullopt;
    std::string out(n, '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    if (!in_.read(out.data(), static_cast<std::streamsize>(n))) return std::nullopt;
    return out;
  }
  template <typename T>
  [[nodiscard]] std::optional<T> at(std::uint64_t offset) {
    const auto raw = bytes(offset, sizeof(T));
    if (!raw) return std::nullopt;
    T value{};
    std::memcpy(&value, raw->data(), sizeof(T));  // x86-64 and the formats: little-endian
    return value;
  }

 private:
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

Error cutShort(const std::filesystem::path& path, const char* what) {
  return makeError(ErrorCode::kDamaged,
                   path.string() + ": " + what + " is cut short or points outside the file");
}

/// The ELF64 core's notes: its program headers' PT_NOTE segments, note by note.
Result<DumpFileInfo> readElfCore(FileReader& file, const std::filesystem::path& path) {
  DumpFileInfo out{"elf-core", {}};
  const auto ident = file.bytes(0, 16);
  const auto type = file.at<std::uint16_t>(16);
  if (!ident || !type || (*ident)[4] != 2 || (*ident)[5] != 1 || *type != 4) {
    return makeError(ErrorCode::kUnsupported,
                     path.string() + " is an ELF file but no 64-bit little-endian core");
  }
  const auto phoff = file.at<std::uint64_t>(32);
  const auto phentsize = file.at<std::uint16_t>(54);
  const auto phnum = file.at<std::uint16_t>(56);
  if (!phoff || !phentsize || !phnum || *phentsize < 56) return cutShort(path, "the ELF header");
  for (std::uint16_t i = 0; i < *phnum; ++i) {
    const std::uint64_t ph = *phoff + std::uint64_t{i} * *phentsize;
    const auto p_type = file.at<std::uint32_t>(ph);
    const auto offset = file.at<std::uint64_t>(ph + 8);
    const auto size = file.at<std::uint64_t>(ph + 32);
    if (!p_type || !offset || !size) return cutShort(path, "a program header");
    if (*p_type != 4) continue;  // PT_NOTE
    const auto notes = file.bytes(*offset, *size);
    if (!notes) return cutShort(path, "the notes");
    for (std::size_t at = 0; at + 12 <= notes->size();) {
      std::uint32_t header[3];
      std::memcpy(header, notes->data() + at, sizeof header);
      const auto align = [](std::size_t n) { return (n + 3) / 4 * 4; };
      const std::size_t name_at = at + 12;
      const std::size_t desc_at = name_at + align(header[0]);
      const std::size_t end = desc_at + align(header[1]);
      if (end > notes->size() || desc_at + header[1] > notes->size()) {
        return cutShort(path, "a note");
      }
      const std::string_view name(notes->data() + name_at, header[0] > 0 ? header[0] - 1 : 0);
      if (name == kDumpDiagnosisOwner && header[2] == kDumpDiagnosisType) {
        out.diagnosis.assign(notes->data() + desc_at, header[1]);
      }
      at = end;
    }
  }
  return out;
}

/// The minidump's stream directory, for the user stream of the diagnosis.
Result<DumpFileInfo> readMinidump(FileReader& file, const std::filesystem::path& path) {
  DumpFileInfo out{"minidump", {}};
  const auto streams = file.at<std::uint32_t>(8);
  const auto directory = file.at<std::uint32_t>(12);
  if (!streams || !directory) return cutShort(path, "the minidump header");
  for (std::uint32_t i = 0; i < *streams; ++i) {
    const std::uint64_t entry = *directory + std::uint64_t{i} * 12;
    const auto type = file.at<std::uint32_t>(entry);
    const auto size = file.at<std::uint32_t>(entry + 4);
    const auto rva = file.at<std::uint32_t>(entry + 8);
    if (!type || !size || !rva) return cutShort(path, "the stream directory");
    if (*type != kDumpDiagnosisType) continue;
    auto data = file.bytes(*rva, *size);
    if (!data) return cutShort(path, "the diagnosis stream");
    out.diagnosis = std::move(*data);
  }
  return out;
}

}  // namespace

Result<DumpFileInfo> readDumpFile(const std::filesystem::path& path) {
  FileReader file(path);
  if (!file.open()) {
    return makeError(ErrorCode::kNotFound, "cannot read the dump " + path.string());
  }
  const auto magic = file.bytes(0, 4);
  if (magic && *magic ==
                   "\x7f"
                   "ELF")
    return readElfCore(file, path);
  if (magic && *magic == "MDMP") return readMinidump(file, path);
  return makeError(ErrorCode::kUnsupported,
                   path.string() + " is neither an ELF core nor a minidump");
}

}  // namespace wctmon::wire
