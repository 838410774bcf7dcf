#include "platform/linux/code_map.h"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "model/format.h"
#include "os/unique_fd.h"
#include "platform/linux/demangle.h"
#include "platform/linux/module_sites_store.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

/// Which file a mapping shows, as far as a cache needs to tell files apart.
using FileKey = std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t, std::int64_t>;

/// Files already read, shared by every process and sample of the service. Bounded: a system
/// that keeps loading new files (a build machine) starts the cache afresh now and then.
class ModuleCache {
 public:
  std::shared_ptr<const ModuleSites> get(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return nullptr;
    const FileKey key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    {
      std::lock_guard lock(mutex_);
      if (auto it = modules_.find(key); it != modules_.end()) return it->second;
    }
    // Read outside the lock: another sample reading the same file at once costs a second read,
    // not a wait. What an earlier run kept on disk spares reading the module at all.
    auto module = std::make_shared<const ModuleSites>(loadKeptOrRead(fd));
    std::lock_guard lock(mutex_);
    if (modules_.size() >= kMaxModules) modules_.clear();
    return modules_.emplace(key, std::move(module)).first->second;
  }

 private:
  static ModuleSites loadKeptOrRead(int fd) {
    static const auto store = ModuleSitesStore::openDefault();
    const auto id = store ? identifyModule(fd) : std::nullopt;
    if (!id) return loadModuleSites(fd);
    if (auto kept = store->load(*id)) return std::move(*kept);
    auto sites = loadModuleSites(fd);
    store->save(*id, sites);
    return sites;
  }

  static constexpr std::size_t kMaxModules = 4096;
  std::mutex mutex_;
  std::map<FileKey, std::shared_ptr<const ModuleSites>> modules_;
};

ModuleCache& moduleCache() {
  static ModuleCache cache;
  return cache;
}

/// Reads the sites among the function symbols of section `scn` (a symbol table), and the
/// anchors among its data symbols.
void readSymbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, ModuleSites& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || shdr.sh_entsize == 0) return;
  const auto count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
    const auto type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_OBJECT && sym.st_shndx != SHN_UNDEF) {
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      for (const auto anchor : kAnchorSymbols) {
        if (name != nullptr && anchor == name) out.anchors.emplace_back(anchor, sym.st_value);
      }
      continue;
    }
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
        sym.st_size == 0) {
      continue;
    }
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (name == nullptr || !mayBeCallSite(name)) continue;
    auto function = demangle(name);
    if (const auto site = callSiteOfFunction(function)) {
      out.ranges.push_back({sym.st_value, sym.st_value + sym.st_size, *site, std::move(function)});
    }
  }
}

/// The start addresses of the functions that .eh_frame_hdr (section `scn`) lists, sorted: its
/// binary-search table, as GNU ld writes it (count udata4, entries datarel sdata4).
std::vector<std::uint64_t> functionStarts(Elf_Scn* scn, const GElf_Shdr& shdr) {
  std::vector<std::uint64_t> out;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size < 12) return out;
  const auto* bytes = static_cast<const unsigned char*>(data->d_buf);
  constexpr unsigned char kPcrelSdata4 = 0x1b;
  constexpr unsigned char kUdata4 = 0x03;
  constexpr unsigned char kDatarelSdata4 = 0x3b;
  if (bytes[0] != 1 || bytes[1] != kPcrelSdata4 || bytes[2] != kUdata4 ||
      bytes[3] != kDatarelSdata4) {
    return out;
  }
  std::uint32_t count = 0;
  std::memcpy(&count, bytes + 8, sizeof(count));
  if (count > (data->d_size - 12) / 8) return out;
  out.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::int32_t start = 0;
    std::memcpy(&start, bytes + 12 + std::size_t{i} * 8, sizeof(start));
    out.push_back(shdr.sh_addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(start)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A file without a full symbol table names only its exported functions, but an exported entry
/// often jumps straight into a static one (pthread_mutex_lock into __pthread_mutex_lock_full,
/// sem_wait into __new_sem_wait_slow64), which is then the one on the stack. A function whose
/// every direct call or jump (found in the executable code, to a function start the unwind
/// table lists) comes from functions of one same call site takes that site.
void addCallees(Elf* elf, Elf_Scn* eh_frame_hdr, ModuleSites& out) {
  GElf_Shdr shdr;
  if (eh_frame_hdr == nullptr || gelf_getshdr(eh_frame_hdr, &shdr) == nullptr) return;
  const auto starts = functionStarts(eh_frame_hdr, shdr);
  if (starts.size() < 2) return;
  std::size_t size = 0;
  const char* image = elf_rawfile(elf, &size);
  if (image == nullptr) return;
  const auto functionOf = [&](std::uint64_t vaddr) -> std::optional<std::uint64_t> {
    auto it = std::upper_bound(starts.begin(), starts.end(), vaddr);
    if (it == starts.begin()) return std::nullopt;
    return *std::prev(it);
  };
  std::size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return;
  struct Code {
    const unsigned char* bytes;
    std::uint64_t vaddr;
    std::uint64_t size;
  };
  std::vector<Code> segments;
  constexpr auto kAnywhere = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD ||
        (phdr.p_flags & PF_X) == 0 || phdr.p_offset > size ||
        phdr.p_filesz > size - phdr.p_offset || phdr.p_filesz < 5) {
      continue;
    }
    segments.push_back({reinterpret_cast<const unsigned char*>(image + phdr.p_offset), phdr.p_vaddr,
                        phdr.p_filesz});
  }
  // Calls and jumps with a 32-bit displacement in [begin, end) of `code` whose target is in
  // [low, high]: (from, target). Their opcode bytes (E8, E9) are looked for eight at a time: they
  // are common in code (in displacements and immediates too) but not in every eight bytes, and
  // a test of each byte alone is a branch the processor mispredicts at every one of them.
  const auto forEachBranch = [](const Code& code, std::uint64_t begin, std::uint64_t end,
                                std::uint64_t low, std::uint64_t high, const auto& visit) {
    constexpr unsigned char kJmpRel32 = 0xE9;  // and 0xE8, call rel32
    constexpr std::uint64_t kOnes = 0x0101010101010101;
    constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7F;
    const auto first = std::max(begin, code.vaddr) - code.vaddr;
    const auto last = std::min(end, code.vaddr + code.size) - code.vaddr;
    if (first + 5 > last) return;
    const auto stop = last - 4;  // the first offset where no whole instruction fits
    const auto branchAt = [&](std::uint64_t offset) {
      std::int32_t rel = 0;
      std::memcpy(&rel, code.bytes + offset + 1, sizeof(rel));
      const std::uint64_t from = code.vaddr + offset;
      const std::uint64_t target = from + 5 + static_cast<std::uint64_t>(std::int64_t{rel});
      if (target - low <= high - low) visit(from, target);
    };
    auto offset = first;
    for (; offset + 8 <= stop; offset += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, code.bytes + offset, sizeof(word));
      // A byte of `zero` is 0 where the byte of `word` is E8 or E9; a byte of `found` then has
      // its top bit set exactly there, and no other bit.
      const std::uint64_t zero = (word | kOnes) ^ (kOnes * kJmpRel32);
      for (auto found = ~(((zero & kLow7) + kLow7) | zero | kLow7); found != 0;
           found &= found - 1) {
        const auto byte = static_cast<std::uint64_t>(std::countr_zero(found)) / 8;
        branchAt(offset + (std::endian::native == std::endian::little ? byte : 7 - byte));
      }
    }
    for (; offset < stop; ++offset) {
      if ((code.bytes[offset] | 1U) == kJmpRel32) branchAt(offset);
    }
  };
  // First the functions the sites themselves branch to, found in the sites' own code (a few
  // kilobytes); then, over all the code, whether every branch to one of those comes from the
  // same kind of site.
  std::vector<std::uint64_t> candidates;
  for (const auto& code : segments) {
    for (const auto& range : out.ranges) {
      if (range.end <= code.vaddr || range.begin >= code.vaddr + code.size) continue;
      forEachBranch(
          code, range.begin, range.end, 0, kAnywhere, [&](std::uint64_t, std::uint64_t target) {
            if (target != range.begin && std::binary_search(starts.begin(), starts.end(), target) &&
                out.at(target) == nullptr) {
              candidates.push_back(target);
            }
          });
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.empty()) return;
  // Most branches between the first candidate and the last go to other functions: a bit set
  // indexed by a hash of the candidates turns nearly all of them away before a search.
  std::array<std::uint64_t, 64> maybe_candidate{};
  const auto bitOf = [](std::uint64_t address) { return (address * 0x9E3779B97F4A7C15U) >> 52; };
  for (const auto c : candidates)
    maybe_candidate[bitOf(c) / 64] |= std::uint64_t{1} << (bitOf(c) % 64);
  // Per callee: the range of a caller whose site all its callers share; nullptr once two
  // disagree or one has none.
  std::map<std::uint64_t, const ModuleSites::Range*> callees;
  for (const auto& code : segments) {
    forEachBranch(code, code.vaddr, code.vaddr + code.size, candidates.front(), candidates.back(),
                  [&](std::uint64_t from, std::uint64_t target) {
                    const auto bit = bitOf(target);
                    if ((maybe_candidate[bit / 64] & (std::uint64_t{1} << (bit % 64))) == 0 ||
                        !std::binary_search(candidates.begin(), candidates.end(), target)) {
                      return;
                    }
                    const auto caller = functionOf(from);
                    if (!caller || *caller == target) return;
                    const ModuleSites::Range* range = out.rangeAt(*caller);
                    auto [it, fresh] = callees.emplace(target, range);
                    if (!fresh && it->second != nullptr &&
                        (range == nullptr || range->site.role != it->second->site.role ||
                         range->site.kind != it->second->site.kind)) {
                      it->second = nullptr;
                    }
                  });
  }
  std::vector<ModuleSites::Range> added;
  for (const auto& [target, caller] : callees) {
    if (caller == nullptr) continue;
    auto next = std::upper_bound(starts.begin(), starts.end(), target);
    if (next == starts.end()) continue;
    added.push_back({target, *next, caller->site, caller->function});
  }
  out.ranges.insert(out.ranges.end(), added.begin(), added.end());
  std::sort(out.ranges.begin(), out.ranges.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
}

}  // namespace

const ModuleSites::Range* ModuleSites::rangeAt(std::uint64_t vaddr) const {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), vaddr,
                             [](std::uint64_t a, const Range& r) { return a < r.begin; });
  if (it == ranges.begin()) return nullptr;
  --it;
  return vaddr < it->end ? &*it : nullptr;
}

const CallSite* ModuleSites::at(std::uint64_t vaddr) const {
  const Range* range = rangeAt(vaddr);
  return range != nullptr ? &range->site : nullptr;
}

ModuleSites loadModuleSites(int fd) {
  static const bool initialised = elf_version(EV_CURRENT) != EV_NONE;
  ModuleSites out;
  if (!initialised) return out;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return out;
  std::size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (std::size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) != nullptr && phdr.p_type == PT_LOAD) {
        out.segments.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
      }
    }
  }
  // The full symbol table names static functions too; a stripped file keeps only the dynamic
  // one, which still names every exported entry point.
  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* eh_frame_hdr = nullptr;
  std::size_t names = 0;
  const bool named = elf_getshdrstrndx(elf, &names) == 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if (shdr.sh_type == SHT_SYMTAB) symtab = scn;
    if (shdr.sh_type == SHT_DYNSYM) dynsym = scn;
    const char* name = named ? elf_strptr(elf, names, shdr.sh_name) : nullptr;
    if (name != nullptr && std::strcmp(name, ".eh_frame_hdr") == 0) eh_frame_hdr = scn;
  }
  bool full = false;
  for (Elf_Scn* scn : {symtab, dynsym}) {
    GElf_Shdr shdr;
    if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr) continue;
    readSymbols(elf, scn, shdr, out);
    full = scn == symtab;
    if (!out.ranges.empty()) break;
  }
  std::sort(out.ranges.begin(), out.ranges.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  // Aliases (pthread_mutex_lock and __pthread_mutex_lock) cover the same range once.
  out.ranges.erase(std::unique(out.ranges.begin(), out.ranges.end(),
                               [](const auto& a, const auto& b) { return a.begin == b.begin; }),
                   out.ranges.end());
  if (!full && !out.ranges.empty()) addCallees(elf, eh_frame_hdr, out);
  elf_end(elf);
  return out;
}

namespace {

/// PROCMAP_QUERY (Linux 6.11, <linux/fs.h>), declared here for the headers of older kernels:
/// the kernel's ABI, stable by its rules.
struct ProcmapQuery {
  std::uint64_t size;
  std::uint64_t query_flags;
  std::uint64_t query_addr;
  std::uint64_t vma_start;
  std::uint64_t vma_end;
  std::uint64_t vma_flags;
  std::uint64_t vma_page_size;
  std::uint64_t vma_offset;
  std::uint64_t inode;
  std::uint32_t dev_major;
  std::uint32_t dev_minor;
  std::uint32_t vma_name_size;
  std::uint32_t build_id_size;
  std::uint64_t vma_name_addr;
  std::uint64_t build_id_addr;
};
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr std::uint64_t kQueryExecutable = 0x04;
constexpr std::uint64_t kQueryCoveringOrNext = 0x10;
constexpr std::uint64_t kQueryFileBacked = 0x20;
constexpr std::uint64_t kVmaExecutable = 0x04;

/// The executable file mappings, asked of the kernel one by one: it skips the rest itself (a
/// process has two mappings a thread, whose maps text alone costs milliseconds at thousands of
/// threads). nullopt where the kernel has no PROCMAP_QUERY.
std::optional<std::vector<FileMapping>> queryExecutableMappings(int maps_fd) {
  std::vector<FileMapping> out;
  std::uint64_t from = 0;
  for (int guard = 0; guard < 65536; ++guard) {
    ProcmapQuery q{};
    q.size = sizeof(q);
    q.query_flags = kQueryExecutable | kQueryCoveringOrNext | kQueryFileBacked;
    q.query_addr = from;
    if (::ioctl(maps_fd, kProcmapQuery, &q) != 0) {
      if (errno == ENOENT) break;  // no mapping past `from`
      if (out.empty() && (errno == ENOTTY || errno == EINVAL)) return std::nullopt;
      break;
    }
    if (q.inode != 0) out.push_back({q.vma_start, q.vma_end, q.vma_offset});
    if (q.vma_end <= from) break;
    from = q.vma_end;
  }
  return out;
}

/// The same, asked of the kernel only for the mappings of files, which the map_files directory
/// lists (the kernel skips the others itself, fast): the walk to the next executable file
/// mapping goes past every mapping in between one query at a time, milliseconds when thousands
/// of threads have a stack each. nullopt where the directory cannot be listed or the kernel has
/// no PROCMAP_QUERY.
std::optional<std::vector<FileMapping>> queryListedMappings(const std::string& base, int maps_fd) {
  DIR* dir = ::opendir((base + "/map_files").c_str());
  if (dir == nullptr) return std::nullopt;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> files;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name(entry->d_name);
    const auto dash = name.find('-');
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    if (dash == std::string_view::npos ||
        std::from_chars(name.data(), name.data() + dash, begin, 16).ptr != name.data() + dash ||
        std::from_chars(name.data() + dash + 1, name.data() + name.size(), end, 16).ptr !=
            name.data() + name.size()) {
      continue;  // "." and ".."
    }
    files.emplace_back(begin, end);
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());
  std::vector<FileMapping> out;
  for (const auto& [begin, end] : files) {
    ProcmapQuery q{};
    q.size = sizeof(q);
    q.query_addr = begin;
    if (::ioctl(maps_fd, kProcmapQuery, &q) != 0) {
      if (errno == ENOTTY || errno == EINVAL) return std::nullopt;
      continue;  // unmapped since it was listed
    }
    if (q.vma_start == begin && (q.vma_flags & kVmaExecutable) != 0 && q.inode != 0) {
      out.push_back({q.vma_start, q.vma_end, q.vma_offset});
    }
  }
  return out;
}

/// The same from the maps text, for older kernels.
std::vector<FileMapping> parseExecutableMappings(int maps_fd) {
  return executableFileMappings(readAll(maps_fd, std::numeric_limits<std::size_t>::max()));
}

/// Calls `each` with every executable mapping of a file that the maps text `maps` lists.
template <typename Each>
void forEachExecutableFile(std::string_view maps, Each each) {
  forEachMapsRange(maps, [&](const MapsRange& range) {
    if (range.executable && range.inode != 0 && range.path.starts_with('/')) each(range);
    return true;
  });
}

}  // namespace

std::vector<FileMapping> executableFileMappings(std::string_view maps) {
  std::vector<FileMapping> out;
  forEachExecutableFile(maps, [&](const MapsRange& range) {
    out.push_back({range.begin, range.end, range.offset});
  });
  return out;
}

void CodeMap::add(const FileMapping& range, int fd) {
  auto module = moduleCache().get(fd);
  if (!module) return;
  const auto segment =
      std::find_if(module->segments.begin(), module->segments.end(), [&](const auto& s) {
        const auto first = s.offset & ~std::uint64_t{0xfff};
        return range.offset >= first && range.offset < s.offset + s.size;
      });
  if (segment == module->segments.end()) return;
  // Runtime address = begin + (file offset - offset); ELF address = file offset - p_offset +
  // p_vaddr.
  const std::uint64_t bias = range.begin - range.offset + segment->offset - segment->vaddr;
  refiners_ = refiners_ || std::any_of(module->ranges.begin(), module->ranges.end(),
                                       [](const auto& r) { return r.site.refines; });
  mappings_.push_back({range.begin, range.end, bias, std::move(module)});
}

void CodeMap::sortMappings() {
  std::sort(mappings_.begin(), mappings_.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
}

CodeMap CodeMap::read(Pid pid) {
  CodeMap out;
  const auto base = "/proc/" + std::to_string(liveTaskOf(pid).value);
  UniqueFd maps(::open((base + "/maps").c_str(), O_RDONLY | O_CLOEXEC));
  if (!maps.valid()) return out;
  auto mappings = queryListedMappings(base, maps.get());
  if (!mappings) mappings = queryExecutableMappings(maps.get());
  if (!mappings) mappings = parseExecutableMappings(maps.get());
  bool followed = true;
  for (const auto& range : *mappings) {
    // map_files opens the very file mapped, even deleted or in another mount namespace.
    const auto name = hexString(range.begin).substr(2) + "-" + hexString(range.end).substr(2);
    UniqueFd fd(::open((base + "/map_files/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.valid()) {
      out.add(range, fd.get());
    } else if (errno == EPERM) {
      followed = false;
      break;
    }
  }
  if (!followed) {
    out = CodeMap();
    out.addByPath(base, maps.get());
  }
  out.sortMappings();
  return out;
}

void CodeMap::addByPath(const std::string& base, int maps_fd) {
  // Following map_files takes CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, which the systemd unit
  // does not give: each file is opened by its path instead, through /proc/PID/root as the
  // process sees its files, and kept only when it is the very file mapped (its inode).
  if (::lseek(maps_fd, 0, SEEK_SET) != 0) return;
  const auto text = readAll(maps_fd, std::numeric_limits<std::size_t>::max());
  std::map<std::string, UniqueFd, std::less<>> opened;
  forEachExecutableFile(text, [&](const MapsRange& range) {
    auto it = opened.find(range.path);
    if (it == opened.end()) {
      UniqueFd fd(::open((base + "/root" + std::string(range.path)).c_str(),
                         O_RDONLY | O_NONBLOCK | O_CLOEXEC));
      struct stat st {};
      if (fd.valid() &&
          (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != range.inode)) {
        fd = UniqueFd();
      }
      it = opened.emplace(std::string(range.path), std::move(fd)).first;
    }
    if (it->second.valid()) add({range.begin, range.end, range.offset}, it->second.get());
  });
}

CodeMap CodeMap::fromFiles(std::span<const MappedFile> files) {
  CodeMap out;
  std::map<std::string, UniqueFd> opened;
  for (const auto& file : files) {
    auto it = opened.find(file.path);
    if (it == opened.end()) {
      it = opened.emplace(file.path, UniqueFd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC)))
               .first;
    }
    if (it->second.valid()) out.add(file.range, it->second.get());
  }
  out.sortMappings();
  return out;
}

std::shared_ptr<const CodeMap> CodeMap::recent(Pid pid, std::uint64_t start_time) {
  if (start_time == 0) return std::make_shared<const CodeMap>(read(pid));
  using Clock = std::chrono::steady_clock;
  constexpr auto kFresh = std::chrono::seconds(1);
  constexpr std::size_t kKept = 64;
  struct Entry {
    Pid pid;
    std::uint64_t start_time;
    Clock::time_point at;
    std::shared_ptr<const CodeMap> map;
  };
  static std::mutex mutex;
  static std::vector<Entry> kept;
  const auto now = Clock::now();
  {
    std::lock_guard lock(mutex);
    for (const auto& e : kept) {
      if (e.pid == pid && e.start_time == start_time && now - e.at < kFresh) return e.map;
    }
  }
  auto map = std::make_shared<const CodeMap>(read(pid));
  std::lock_guard lock(mutex);
  std::erase_if(kept, [&](const Entry& e) {
    return (e.pid == pid && e.start_time == start_time) || now - e.at >= kFresh;
  });
  if (kept.size() >= kKept) kept.erase(kept.begin());
  kept.push_back({pid, start_time, now, map});
  return map;
}

std::optional<std::uint64_t> CodeMap::anchorAddress(std::string_view symbol) const {
  // Every segment of a module is moved by the same bias, its data as its code.
  for (const auto& m : mappings_) {
    for (const auto& [name, vaddr] : m.module->anchors) {
      if (name == symbol) return vaddr + m.bias;
    }
  }
  return std::nullopt;
}

const CodeMap::Mapping* CodeMap::mappingOf(std::uint64_t address) const {
  auto it = std::upper_bound(mappings_.begin(), mappings_.end(), address,
                             [](std::uint64_t a, const Mapping& m) { return a < m.begin; });
  if (it == mappings_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

const CallSite* CodeMap::siteAt(std::uint64_t address) const {
  const auto* mapping = mappingOf(address);
  if (mapping == nullptr) return nullptr;
  // A return address points after the call: the call itself is at the byte before it.
  return mapping->module->at(address - 1 - mapping->bias);
}

}  // namespace wctmon::linux_platform
