#include "platform/windows/pe_export_table.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>

namespace wctmon::windows_platform {
namespace {

const void* remote(std::uint64_t address) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
}

}  // namespace

ExportTable ExportTable::read(HANDLE process, std::uint64_t base) {
  ExportTable table;
  const auto readAt = [&](std::uint64_t rva, void* into, std::size_t size) {
    SIZE_T n = 0;
    return ::ReadProcessMemory(process, remote(base + rva), into, size, &n) != FALSE && n == size;
  };
  IMAGE_DOS_HEADER dos{};
  if (!readAt(0, &dos, sizeof(dos)) || dos.e_magic != IMAGE_DOS_SIGNATURE) return table;
  IMAGE_NT_HEADERS64 nt{};  // the larger of the two forms; the headers' page holds either
  if (!readAt(static_cast<std::uint64_t>(dos.e_lfanew), &nt, sizeof(nt)) ||
      nt.Signature != IMAGE_NT_SIGNATURE) {
    return table;
  }
  IMAGE_DATA_DIRECTORY directory{};
  if (nt.OptionalHeader.Magic == IMAGE_NT_OPTIONAL_HDR64_MAGIC) {
    directory = nt.OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
  } else if (nt.OptionalHeader.Magic == IMAGE_NT_OPTIONAL_HDR32_MAGIC) {
    IMAGE_NT_HEADERS32 nt32{};
    std::memcpy(&nt32, &nt, sizeof(nt32));
    directory = nt32.OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
  }
  if (directory.VirtualAddress == 0 || directory.Size < sizeof(IMAGE_EXPORT_DIRECTORY) ||
      directory.Size > kMaxExportBytes) {
    return table;
  }
  // The directory, its three arrays and the names all lie in the export data (.edata): one
  // read. Anything pointing outside it is skipped rather than read piecemeal.
  std::vector<std::byte> data(directory.Size);
  if (!readAt(directory.VirtualAddress, data.data(), data.size())) return table;
  IMAGE_EXPORT_DIRECTORY exports{};
  std::memcpy(&exports, data.data(), sizeof(exports));
  const auto inside = [&](DWORD rva, std::uint64_t bytes) {
    return rva >= directory.VirtualAddress &&
           rva - directory.VirtualAddress + bytes <= directory.Size;
  };
  const auto at = [&](DWORD rva) { return data.data() + (rva - directory.VirtualAddress); };
  if (!inside(exports.AddressOfFunctions, exports.NumberOfFunctions * 4ULL) ||
      !inside(exports.AddressOfNames, exports.NumberOfNames * 4ULL) ||
      !inside(exports.AddressOfNameOrdinals, exports.NumberOfNames * 2ULL)) {
    return table;
  }
  for (DWORD i = 0; i < exports.NumberOfNames; ++i) {
    DWORD name_rva = 0;
    WORD ordinal = 0;
    std::memcpy(&name_rva, at(exports.AddressOfNames) + i * 4ULL, sizeof(name_rva));
    std::memcpy(&ordinal, at(exports.AddressOfNameOrdinals) + i * 2ULL, sizeof(ordinal));
    if (ordinal >= exports.NumberOfFunctions || !inside(name_rva, 1)) continue;
    DWORD function_rva = 0;
    std::memcpy(&function_rva, at(exports.AddressOfFunctions) + ordinal * 4ULL,
                sizeof(function_rva));
    // An address inside the export data is a forwarder ("NTDLL.RtlFoo"), not code.
    if (function_rva == 0 || inside(function_rva, 0)) continue;
    const auto* name = reinterpret_cast<const char*>(at(name_rva));
    const std::size_t room = directory.Size - (name_rva - directory.VirtualAddress);
    table.entries_.emplace_back(base + function_rva, std::string(name, ::strnlen(name, room)));
  }
  std::sort(table.entries_.begin(), table.entries_.end());
  return table;
}

const std::pair<std::uint64_t, std::string>* ExportTable::covering(std::uint64_t address) const {
  auto it = std::upper_bound(
      entries_.begin(), entries_.end(), address,
      [](std::uint64_t a, const std::pair<std::uint64_t, std::string>& e) { return a < e.first; });
  if (it == entries_.begin()) return nullptr;
  --it;
  // Aliases share an address (NtWaitForSingleObject and ZwWaitForSingleObject): the first
  // name in order is taken, so that a frame is always named the same.
  while (it != entries_.begin() && std::prev(it)->first == it->first) --it;
  return address - it->first <= kNearBytes ? &*it : nullptr;
}

}  // namespace wctmon::windows_platform
