#include "platform/linux/core_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include "model/format.h"

namespace wctmon::linux_platform {
namespace {

/// The element of `sorted` (by `begin_of`) whose range [begin, begin + size) holds `addr`.
template <typename T, typename Begin, typename Size>
const T* covering(const std::vector<T>& sorted, std::uint64_t addr, Begin begin_of, Size size_of) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), addr,
                             [&](std::uint64_t a, const T& e) { return a < begin_of(e); });
  if (it == sorted.begin()) return nullptr;
  --it;
  return addr - begin_of(*it) < size_of(*it) ? &*it : nullptr;
}

std::size_t preadAll(int fd, std::span<std::byte> out, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace

Result<CoreMemory> CoreMemory::open(const std::filesystem::path& path, const wire::ElfCore& core,
                                    std::vector<CoreFileMapping> files) {
  CoreMemory out;
  out.core_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!out.core_.valid()) {
    return makeError(ErrorCode::kNotFound,
                     "cannot read " + path.string() + ": " + std::strerror(errno));
  }
  for (const auto& load : core.loads) {
    if (load.filesz > 0 &&
        (load.offset > core.file_size || load.filesz > core.file_size - load.offset)) {
      return makeError(ErrorCode::kDamaged, path.string() + " is cut short: its memory at " +
                                                std::to_string(load.vaddr) + " ends at byte " +
                                                std::to_string(load.offset + load.filesz) +
                                                " of a file of " + std::to_string(core.file_size) +
                                                " bytes (a core whose writing was cut off)");
    }
    out.segments_.push_back(
        {load.vaddr, load.memsz, load.offset, std::min(load.filesz, load.memsz)});
  }
  std::sort(out.segments_.begin(), out.segments_.end(),
            [](const Segment& a, const Segment& b) { return a.vaddr < b.vaddr; });
  std::erase_if(files, [](const CoreFileMapping& f) { return f.end <= f.begin; });
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  out.files_ = std::move(files);
  return out;
}

std::size_t CoreMemory::readFromFile(const CoreFileMapping& file, std::uint64_t addr,
                                     std::span<std::byte> out) {
  auto it = opened_.find(file.path);
  if (it == opened_.end()) {
    it =
        opened_.emplace(file.path, UniqueFd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC))).first;
  }
  if (!it->second.valid()) return 0;
  const auto n = std::min<std::uint64_t>(out.size(), file.end - addr);
  return preadAll(it->second.get(), out.first(n), file.offset + (addr - file.begin));
}

std::size_t CoreMemory::readSome(std::uint64_t addr, std::span<std::byte> out) {
  const auto* segment = covering(
      segments_, addr, [](const Segment& s) { return s.vaddr; },
      [](const Segment& s) { return s.memsz; });
  if (segment != nullptr && addr - segment->vaddr < segment->filesz) {
    const auto in_segment = segment->filesz - (addr - segment->vaddr);
    const auto n = std::min<std::uint64_t>(out.size(), in_segment);
    return preadAll(core_.get(), out.first(n), segment->offset + (addr - segment->vaddr));
  }
  // Not in the core: a file's contents, if a file was mapped there.
  const auto* file = covering(
      files_, addr, [](const CoreFileMapping& f) { return f.begin; },
      [](const CoreFileMapping& f) { return f.end - f.begin; });
  if (file == nullptr) return 0;
  auto n = out.size();
  // Up to where the core takes over again.
  if (segment != nullptr) n = std::min<std::uint64_t>(n, segment->vaddr + segment->memsz - addr);
  return readFromFile(*file, addr, out.first(n));
}

std::size_t CoreMemory::readAvailable(std::uint64_t addr, std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const auto n = readSome(addr + done, out.subspan(done));
    if (n == 0) break;
    done += n;
  }
  return done;
}

MemoryAccess CoreMemory::read(std::uint64_t addr, std::span<std::byte> out) {
  return readAvailable(addr, out) == out.size() ? MemoryAccess::kOk : MemoryAccess::kFault;
}

std::optional<std::string> CoreMemory::readString(std::uint64_t addr, std::size_t max) {
  std::string out;
  std::array<std::byte, 256> chunk{};
  while (out.size() < max) {
    const auto n = readAvailable(addr + out.size(), chunk);
    if (n == 0) return std::nullopt;
    const auto* text = reinterpret_cast<const char*>(chunk.data());
    const auto nul = ::strnlen(text, n);
    out.append(text, nul);
    if (nul < n) return out;
  }
  return std::nullopt;
}

}  // namespace wctmon::linux_platform
