#include "wire/dump_file.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "model/dump_format.h"
#include "wire/elf_core.h"
#include "wire/file_reader.h"

namespace wctmon::wire {
namespace {

Error cutShort(const std::filesystem::path& path, const char* what) {
  return makeError(ErrorCode::kDamaged,
                   path.string() + ": " + what + " is cut short or points outside the file");
}

/// The ELF core's note "WCTMON", if it has one.
Result<DumpFileInfo> readCoreDiagnosis(const std::filesystem::path& path) {
  auto core = readElfCore(path);
  if (!core) return core.error();
  DumpFileInfo out{"elf-core", {}};
  for (auto& note : core->notes) {
    if (note.name == kDumpDiagnosisOwner && note.type == kDumpDiagnosisType) {
      out.diagnosis = std::move(note.desc);
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
    return readCoreDiagnosis(path);
  if (magic && *magic == "MDMP") return readMinidump(file, path);
  return makeError(ErrorCode::kUnsupported,
                   path.string() + " is neither an ELF core nor a minidump");
}

}  // namespace wctmon::wire
