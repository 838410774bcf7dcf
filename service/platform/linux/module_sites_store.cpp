#include "platform/linux/module_sites_store.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <system_error>
#include <vector>

#include "os/unique_fd.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {
namespace {

constexpr std::string_view kMagic = "WCTMON-SITES-1\n";
/// A module's entry is a few kilobytes; anything much larger is not one of ours.
constexpr std::size_t kMaxEntry = 4 << 20;
constexpr std::string_view kGnu("GNU\0", 4);

std::uint64_t checksum(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325;  // FNV-1a
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3;
  }
  return h;
}

/// The build id among the notes in `notes` (the contents of one PT_NOTE segment).
std::string buildIdIn(std::string_view notes) {
  while (notes.size() >= 12) {
    std::uint32_t name_size = 0;
    std::uint32_t desc_size = 0;
    std::uint32_t type = 0;
    std::memcpy(&name_size, notes.data(), 4);
    std::memcpy(&desc_size, notes.data() + 4, 4);
    std::memcpy(&type, notes.data() + 8, 4);
    const std::size_t name_at = 12;
    const std::size_t desc_at = name_at + ((std::size_t{name_size} + 3) & ~std::size_t{3});
    const std::size_t end = desc_at + ((std::size_t{desc_size} + 3) & ~std::size_t{3});
    if (name_size > notes.size() || desc_size > notes.size() || end > notes.size()) break;
    if (type == NT_GNU_BUILD_ID && notes.substr(name_at, name_size) == kGnu) {
      return std::string(notes.substr(desc_at, desc_size));
    }
    notes.remove_prefix(end);
  }
  return {};
}

/// The build id of this program, from its notes in memory.
const std::string& ownBuildId() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
          // The first object is the program itself.
          for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_NOTE) continue;
            const auto* notes = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
            auto note = buildIdIn(std::string_view(notes, ph.p_memsz));
            if (!note.empty()) {
              *static_cast<std::string*>(out) = std::move(note);
              break;
            }
          }
          return 1;
        },
        &found);
    return found;
  }();
  return id;
}

/// Appends fixed-size values and counted strings.
class Writer {
 public:
  template <typename T>
  void put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  void put(std::string_view text) {
    put(static_cast<std::uint32_t>(text.size()));
    out_.append(text);
  }
  std::string& text() { return out_; }

 private:
  std::string out_;
};

/// Reads what Writer wrote; once anything is missing, every read fails.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool get(T& value) {
    if (in_.size() < sizeof(T)) return fail();
    std::memcpy(&value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool get(std::string& text) {
    std::uint32_t size = 0;
    if (!get(size) || in_.size() < size) return fail();
    text.assign(in_.substr(0, size));
    in_.remove_prefix(size);
    return true;
  }
  [[nodiscard]] bool done() const { return ok_ && in_.empty(); }

 private:
  bool fail() {
    ok_ = false;
    in_ = {};
    return false;
  }
  std::string_view in_;
  bool ok_ = true;
};

void putIdentity(Writer& w, const std::string& writer, const ModuleIdentity& id) {
  w.put(std::string_view(writer));
  w.put(id.device);
  w.put(id.inode);
  w.put(id.size);
  w.put(id.mtime_ns);
  w.put(id.ctime_ns);
  w.put(std::string_view(id.build_id));
}

bool getIdentity(Reader& r, std::string& writer, ModuleIdentity& id) {
  return r.get(writer) && r.get(id.device) && r.get(id.inode) && r.get(id.size) &&
         r.get(id.mtime_ns) && r.get(id.ctime_ns) && r.get(id.build_id);
}

/// Whether `st` is something of this user's that only this user can change.
bool ours(const struct stat& st) {
  return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::int64_t nanoseconds(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

std::optional<ModuleIdentity> identifyModule(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  ModuleIdentity id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = st.st_size;
  id.mtime_ns = nanoseconds(st.st_mtim);
  id.ctime_ns = nanoseconds(st.st_ctim);
  // The build id from a few reads of the headers and notes: mapping the file (as libelf does)
  // and unmapping it cost more than what the entry spares, for a file that is not otherwise read.
  const auto readAt = [fd](void* out, std::size_t size, std::uint64_t offset) {
    return ::pread(fd, out, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
  };
  Elf64_Ehdr header{};
  if (!readAt(&header, sizeof(header), 0) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] !=
          (std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB) ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum > 256) {
    return id;
  }
  std::vector<Elf64_Phdr> phdrs(header.e_phnum);
  if (!readAt(phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr), header.e_phoff)) return id;
  constexpr std::uint64_t kMaxNotes = 64 * 1024;
  for (const auto& ph : phdrs) {
    if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > kMaxNotes) continue;
    std::string notes(ph.p_filesz, '\0');
    if (!readAt(notes.data(), notes.size(), ph.p_offset)) continue;
    id.build_id = buildIdIn(notes);
    if (!id.build_id.empty()) break;
  }
  return id;
}

std::optional<ModuleSitesStore> ModuleSitesStore::open(const std::string& directory) {
  const auto& writer = ownBuildId();
  if (writer.empty() || directory.empty() || directory.front() != '/') return std::nullopt;
  // The parents as the user's other directories are; the store itself private.
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(directory).parent_path(), ignored);
  (void)::mkdir(directory.c_str(), 0700);
  struct stat st {};
  if (::lstat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !ours(st)) {
    return std::nullopt;
  }
  // A directory of entries per build of wctmon: two builds in use (an installed one and one
  // being worked on) keep theirs side by side instead of replacing each other's. When a build
  // first comes, only the most recently used few of the others are kept.
  std::string hex;
  for (const char c : writer) {
    constexpr std::string_view kHex = "0123456789abcdef";
    hex += kHex[static_cast<unsigned char>(c) >> 4];
    hex += kHex[static_cast<unsigned char>(c) & 0xf];
  }
  const std::string own = directory + "/" + hex;
  if (::mkdir(own.c_str(), 0700) == 0) pruneBuilds(directory, hex);
  if (::lstat(own.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !ours(st)) return std::nullopt;
  return ModuleSitesStore(own, writer);
}

void ModuleSitesStore::pruneBuilds(const std::string& directory, const std::string& own) {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> builds;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const auto name = entry.path().filename().string();
    const bool build_id = !name.empty() && name.size() <= 128 &&
                          name.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!build_id || name == own || !entry.is_directory(error)) continue;
    builds.emplace_back(entry.last_write_time(error), entry.path());
  }
  if (builds.size() < kKeptBuilds) return;
  std::sort(builds.begin(), builds.end());
  for (std::size_t i = 0; i + kKeptBuilds - 1 < builds.size(); ++i) {
    std::filesystem::remove_all(builds[i].second, error);
  }
}

std::optional<ModuleSitesStore> ModuleSitesStore::openDefault() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base;
  if (xdg != nullptr && xdg[0] == '/') {
    base = xdg;
  } else if (home != nullptr && home[0] == '/') {
    base = std::string(home) + "/.cache";
  } else {
    return std::nullopt;
  }
  return open(base + "/wctmon/modules");
}

std::string ModuleSitesStore::pathOf(const ModuleIdentity& id) const {
  // One entry per file: a module updated in place replaces its entry instead of adding one.
  return directory_ + "/" + std::to_string(id.device) + "-" + std::to_string(id.inode) + ".sites";
}

std::optional<ModuleSites> ModuleSitesStore::load(const ModuleIdentity& id) const {
  UniqueFd fd(::open(pathOf(id).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !ours(st) ||
      static_cast<std::size_t>(st.st_size) > kMaxEntry) {
    return std::nullopt;
  }
  const std::string text = readAll(fd.get(), kMaxEntry);
  constexpr std::size_t kSum = sizeof(std::uint64_t);
  if (text.size() < kMagic.size() + kSum || !text.starts_with(kMagic)) return std::nullopt;
  const std::string_view body(text.data(), text.size() - kSum);
  std::uint64_t sum = 0;
  std::memcpy(&sum, text.data() + body.size(), kSum);
  if (sum != checksum(body)) return std::nullopt;

  Reader r(body.substr(kMagic.size()));
  std::string writer;
  ModuleIdentity kept;
  if (!getIdentity(r, writer, kept) || writer != writer_ || !(kept == id)) return std::nullopt;
  ModuleSites out;
  std::uint32_t count = 0;
  if (!r.get(count)) return std::nullopt;
  for (std::uint32_t i = 0; i < count; ++i) {
    ModuleSites::Range range;
    if (!r.get(range.begin) || !r.get(range.end) || !r.get(range.function)) return std::nullopt;
    const auto site = callSiteOfFunction(range.function);
    if (!site) return std::nullopt;
    range.site = *site;
    out.ranges.push_back(std::move(range));
  }
  if (!r.get(count)) return std::nullopt;
  for (std::uint32_t i = 0; i < count; ++i) {
    ModuleSites::Segment segment;
    if (!r.get(segment.offset) || !r.get(segment.vaddr) || !r.get(segment.size)) {
      return std::nullopt;
    }
    out.segments.push_back(segment);
  }
  if (!r.get(count)) return std::nullopt;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t anchor = 0;
    std::uint64_t vaddr = 0;
    if (!r.get(anchor) || !r.get(vaddr) || anchor >= std::size(kAnchorSymbols)) {
      return std::nullopt;
    }
    out.anchors.emplace_back(kAnchorSymbols[anchor], vaddr);
  }
  if (!r.done()) return std::nullopt;
  return out;
}

void ModuleSitesStore::save(const ModuleIdentity& id, const ModuleSites& sites) const {
  Writer w;
  w.text().append(kMagic);
  putIdentity(w, writer_, id);
  w.put(static_cast<std::uint32_t>(sites.ranges.size()));
  for (const auto& range : sites.ranges) {
    w.put(range.begin);
    w.put(range.end);
    w.put(std::string_view(range.function));
  }
  w.put(static_cast<std::uint32_t>(sites.segments.size()));
  for (const auto& segment : sites.segments) {
    w.put(segment.offset);
    w.put(segment.vaddr);
    w.put(segment.size);
  }
  w.put(static_cast<std::uint32_t>(sites.anchors.size()));
  for (const auto& [name, vaddr] : sites.anchors) {
    const auto* anchor = std::find(std::begin(kAnchorSymbols), std::end(kAnchorSymbols), name);
    w.put(static_cast<std::uint32_t>(anchor - std::begin(kAnchorSymbols)));
    w.put(vaddr);
  }
  w.put(checksum(w.text()));

  // Written aside and renamed into place: a reader sees the old entry or the new one, whole.
  const std::string path = pathOf(id);
  std::string temporary = path + ".XXXXXX";
  UniqueFd fd(::mkstemp(temporary.data()));
  if (!fd.valid()) return;
  const std::string& text = w.text();
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  fd.reset();
  if (written != text.size() || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
  }
}

}  // namespace wctmon::linux_platform
