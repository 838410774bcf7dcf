#include "platform/linux/go_runtime.h"

#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include "os/unique_fd.h"
#include "platform/linux/call_sites.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/process_memory.h"

namespace wctmon::linux_platform {
namespace {

// Go's goroutine states (runtime/runtime2.go); _Gscan is a bit over them while a GC scans.
constexpr std::uint32_t kGscan = 0x1000;
constexpr std::uint32_t kGwaiting = 4;
constexpr std::uint32_t kGdead = 6;
constexpr std::array<std::string_view, 10> kStatusNames{
    "idle",     "runnable", "running", "syscall",   "waiting",
    "moribund", "dead",     "enqueue", "copystack", "preempted"};

/// Bounds of what one runtime's data may be, beyond which the layout is not the one assumed.
constexpr std::size_t kMaxWaitReasons = 64;
constexpr std::size_t kMaxReasonLength = 64;
constexpr std::size_t kMaxVersionLength = 64;

template <typename T>
std::optional<T> readValue(GoMemory& memory, std::uint64_t addr) {
  T value{};
  if (!memory.read(addr, std::as_writable_bytes(std::span(&value, 1)))) return std::nullopt;
  return value;
}

template <typename T>
T fieldOf(const std::vector<std::byte>& g, std::size_t offset) {
  T value{};
  std::memcpy(&value, g.data() + offset, sizeof(T));
  return value;
}

/// A Go string header ({ptr, len}) at `addr` and its bytes, at most `max` of them.
std::optional<std::string> readGoString(GoMemory& memory, std::uint64_t addr, std::size_t max) {
  const auto ptr = readValue<std::uint64_t>(memory, addr);
  const auto len = readValue<std::uint64_t>(memory, addr + 8);
  if (!ptr || !len || *len > max) return std::nullopt;
  std::string out(*len, '\0');
  if (*len == 0) return out;
  if (!memory.read(*ptr, std::as_writable_bytes(std::span(out.data(), out.size())))) {
    return std::nullopt;
  }
  return out;
}

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

StackFrame frameAt(const GoBinary& binary, std::uint64_t bias, std::uint64_t pc, bool returns) {
  StackFrame frame;
  frame.pc = pc;
  // A return address is past its call, which may be the last instruction of its function.
  const auto vaddr = pc - bias - (returns ? 1 : 0);
  if (const auto* f = binary.functionAt(vaddr)) {
    frame.function = f->name;
    frame.offset = pc - bias - f->begin;
    frame.module = binary.module;
  }
  return frame;
}

/// The frames of a parked goroutine: its saved pc, then the return addresses along the frame
/// pointers (Go on amd64 keeps them), while they stay inside its stack and go up it.
std::vector<StackFrame> framesOf(const GoBinary& binary, std::uint64_t bias, GoMemory& memory,
                                 std::uint64_t pc, std::uint64_t bp, std::uint64_t lo,
                                 std::uint64_t hi, std::size_t max_frames) {
  std::vector<StackFrame> out;
  if (pc == 0 || max_frames == 0) return out;
  out.push_back(frameAt(binary, bias, pc, false));
  while (out.size() < max_frames && bp >= lo && bp % 8 == 0 && bp + 16 <= hi) {
    std::array<std::uint64_t, 2> words{};
    if (!memory.read(bp, std::as_writable_bytes(std::span(words)))) break;
    const auto [next_bp, ret] = words;
    if (ret == 0) break;
    out.push_back(frameAt(binary, bias, ret, true));
    if (next_bp <= bp) break;
    bp = next_bp;
  }
  return out;
}

GoProgram notVisible(std::string version, std::string why) {
  GoProgram out;
  out.version = std::move(version);
  out.note = std::move(why);
  return out;
}

/// Whether the goroutine started at function `start` is one of the runtime's own (its GC
/// workers, finalizer, scavenger), as Go's own tracebacks tell them apart.
bool isSystemGoroutine(std::string_view start) {
  return start.starts_with("runtime.") && start != "runtime.main";
}

/// The functions and the runtime's variables among the symbols of `symtab`.
void readGoSymbols(Elf* elf, Elf_Scn* symtab, GoBinary& out) {
  GElf_Shdr shdr;
  Elf_Data* data = elf_getdata(symtab, nullptr);
  if (gelf_getshdr(symtab, &shdr) == nullptr || data == nullptr || shdr.sh_entsize == 0) return;
  const auto count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_shndx == SHN_UNDEF) {
      continue;
    }
    const char* raw = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (raw == nullptr) continue;
    const std::string_view name(raw);
    const auto type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_FUNC && sym.st_size > 0) {
      out.functions.push_back({sym.st_value, sym.st_value + sym.st_size, std::string(name)});
    } else if (type == STT_OBJECT && name.starts_with("runtime.")) {
      if (name == "runtime.allgs") out.allgs = sym.st_value;
      if (name == "runtime.allglen") out.allglen = sym.st_value;
      if (name == "runtime.buildVersion") out.build_version = sym.st_value;
      if (name == "runtime.waitReasonStrings") {
        out.wait_reason_strings = sym.st_value;
        out.wait_reason_count = sym.st_size / 16;
      }
    }
  }
}

}  // namespace

const GoBinary::Function* GoBinary::functionAt(std::uint64_t vaddr) const {
  auto it = std::upper_bound(functions.begin(), functions.end(), vaddr,
                             [](std::uint64_t a, const Function& f) { return a < f.begin; });
  if (it == functions.begin()) return nullptr;
  --it;
  return vaddr < it->end ? &*it : nullptr;
}

std::string goBuildInfoVersion(std::span<const std::byte> section) {
  constexpr std::string_view kMagic = "\xff Go buildinf:";
  constexpr std::size_t kHeader = 32;
  constexpr std::uint8_t kVersionInline = 2;
  if (section.size() <= kHeader || std::memcmp(section.data(), kMagic.data(), kMagic.size()) != 0 ||
      (std::to_integer<std::uint8_t>(section[15]) & kVersionInline) == 0) {
    return {};
  }
  // A uvarint length, then the version.
  std::uint64_t length = 0;
  std::size_t at = kHeader;
  for (int shift = 0; at < section.size() && shift < 64; shift += 7) {
    const auto byte = std::to_integer<std::uint8_t>(section[at++]);
    length |= std::uint64_t{byte & 0x7fU} << shift;
    if ((byte & 0x80U) == 0) break;
  }
  if (length == 0 || length > kMaxVersionLength || length > section.size() - at) return {};
  std::string out(reinterpret_cast<const char*>(section.data() + at), length);
  return printable(out) ? out : std::string();
}

GoBinary loadGoBinary(int fd) {
  static const bool initialised = elf_version(EV_CURRENT) != EV_NONE;
  GoBinary out;
  if (!initialised) return out;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return out;
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) != nullptr && ehdr.e_machine == EM_X86_64) {
    out.entry = ehdr.e_entry;
    std::size_t names = 0;
    const bool named = elf_getshdrstrndx(elf, &names) == 0;
    Elf_Scn* symtab = nullptr;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) continue;
      if (shdr.sh_type == SHT_SYMTAB) symtab = scn;
      const char* section = named ? elf_strptr(elf, names, shdr.sh_name) : nullptr;
      if (section != nullptr && std::strcmp(section, ".go.buildinfo") == 0) {
        out.go = true;
        if (Elf_Data* info = elf_getdata(scn, nullptr); info != nullptr && info->d_buf) {
          out.build_info_version = goBuildInfoVersion(
              std::span(static_cast<const std::byte*>(info->d_buf), info->d_size));
        }
      }
    }
    // Only a Go binary's symbols are kept: any other file is looked at once, for nothing.
    if (out.go && symtab != nullptr) readGoSymbols(elf, symtab, out);
  }
  elf_end(elf);
  std::sort(out.functions.begin(), out.functions.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  return out;
}

std::optional<GoLayout> goLayoutOf(std::string_view version) {
  // Verified on Debian 12's Go 1.19 (amd64) with gdb: ptype of runtime.g and runtime.gobuf.
  if (version == "go1.19" || version.starts_with("go1.19.")) {
    GoLayout l;
    l.stack_lo = 0;
    l.stack_hi = 8;
    l.sched_pc = 56 + 8;  // sched (a gobuf) at 56: sp, pc, g, ctxt, ret, lr, bp
    l.sched_bp = 56 + 48;
    l.atomicstatus = 144;
    l.goid = 152;
    l.waitsince = 168;
    l.waitreason = 176;
    l.startpc = 312;
    l.g_size = 320;
    return l;
  }
  return std::nullopt;
}

GoWait goWaitOf(std::string_view reason, std::span<const StackFrame> frames) {
  // Go 1.20 and later name these waits themselves.
  if (reason == "sync.Mutex.Lock" || reason == "sync.RWMutex.Lock" ||
      reason == "sync.RWMutex.RLock") {
    return {std::string(reason), true};
  }
  if (reason != "semacquire") return {std::string(reason), false};
  // The outermost call of package sync before the program's own frames says what it called:
  // RWMutex.Lock waits in Mutex.Lock first.
  struct Caller {
    std::string_view function;
    std::string_view waits_on;
    bool lock;
  };
  static constexpr std::array<Caller, 5> kCallers{{
      {"sync.(*Mutex).Lock", "sync.Mutex.Lock", true},
      {"sync.(*Mutex).lockSlow", "sync.Mutex.Lock", true},
      {"sync.(*RWMutex).Lock", "sync.RWMutex.Lock", true},
      {"sync.(*RWMutex).RLock", "sync.RWMutex.RLock", true},
      {"sync.(*WaitGroup).Wait", "sync.WaitGroup.Wait", false},
  }};
  GoWait out{"semacquire", true};
  for (const auto& frame : frames) {
    const std::string_view f = frame.function;
    if (!f.starts_with("runtime.") && !f.starts_with("sync.")) break;
    for (const auto& caller : kCallers) {
      if (f == caller.function) out = {std::string(caller.waits_on), caller.lock};
    }
  }
  return out;
}

GoProgram readGoProgram(const GoBinary& binary, std::uint64_t bias, GoMemory& memory,
                        std::chrono::nanoseconds monotonic_now, const GoReadLimits& limits) {
  if (!binary.go) {
    return notVisible("", "its executable has no Go build information (.go.buildinfo)");
  }
  if (!binary.hasRuntime()) {
    return notVisible(binary.build_info_version,
                      "its executable has no symbol table (stripped) to find its goroutines by");
  }
  const auto version =
      readGoString(memory, binary.build_version + bias, kMaxVersionLength).value_or("");
  if (version.empty() || !printable(version)) {
    return notVisible("", "its runtime.buildVersion could not be read");
  }
  const auto layout = goLayoutOf(version);
  if (!layout) return notVisible(version, "the layout of its runtime is not known to wctmon");
  const auto invalid = [&](const std::string& what) {
    return notVisible(version, "its goroutine list did not read as Go " + version +
                                   " lays it out (" + what + ")");
  };

  if (binary.wait_reason_count == 0 || binary.wait_reason_count > kMaxWaitReasons) {
    return invalid("runtime.waitReasonStrings");
  }
  std::vector<std::string> reasons;
  for (std::size_t i = 0; i < binary.wait_reason_count; ++i) {
    auto s = readGoString(memory, binary.wait_reason_strings + bias + i * 16, kMaxReasonLength);
    if (!s || !printable(*s) || (i == 0) != s->empty()) return invalid("its wait reasons");
    reasons.push_back(std::move(*s));
  }

  // allgs only grows (gs are reused, never freed); allglen is set after the slice, so the
  // smaller of the two is what both agree on.
  std::array<std::uint64_t, 3> slice{};
  const auto allglen = readValue<std::uint64_t>(memory, binary.allglen + bias);
  if (!allglen || !memory.read(binary.allgs + bias, std::as_writable_bytes(std::span(slice)))) {
    return invalid("runtime.allgs");
  }
  const auto [array, len, cap] = slice;
  if (*allglen > len || len > cap || *allglen == 0 || array == 0 || array % 8 != 0) {
    return invalid("runtime.allgs");
  }
  GoProgram out;
  out.version = version;
  out.visible = true;
  const std::size_t count = std::min<std::uint64_t>(*allglen, limits.max_goroutines);
  if (count < *allglen) {
    out.note = "only the first " + std::to_string(count) + " of " + std::to_string(*allglen) +
               " goroutines were read";
  }
  std::vector<std::uint64_t> gs(count);
  if (!memory.read(array, std::as_writable_bytes(std::span(gs)))) return invalid("runtime.allgs");

  struct Parked {
    std::uint64_t id = 0;
    std::vector<std::byte> g;
  };
  std::vector<Parked> parked;
  std::set<std::uint64_t> ids;
  std::vector<std::byte> g(layout->g_size);
  for (const auto at : gs) {
    if (at == 0 || at % 8 != 0 || !memory.read(at, g)) return invalid("a g");
    const auto status = fieldOf<std::uint32_t>(g, layout->atomicstatus) & ~kGscan;
    const auto id = fieldOf<std::int64_t>(g, layout->goid);
    if (status >= kStatusNames.size()) return invalid("a status");
    if (status == kGdead) continue;
    if (id <= 0 || !ids.insert(static_cast<std::uint64_t>(id)).second) return invalid("a goid");
    ++out.goroutines;
    if (status != kGwaiting) continue;
    if (fieldOf<std::uint8_t>(g, layout->waitreason) >= reasons.size()) {
      return invalid("a wait reason");
    }
    parked.push_back({static_cast<std::uint64_t>(id), g});
  }
  std::sort(parked.begin(), parked.end(), [](const auto& a, const auto& b) { return a.id < b.id; });

  std::size_t unlisted = 0;
  for (const auto& p : parked) {
    const auto startpc = fieldOf<std::uint64_t>(p.g, layout->startpc);
    const auto* start = binary.functionAt(startpc - bias);
    if (start != nullptr && isSystemGoroutine(start->name)) continue;
    if (out.blocked.size() >= limits.max_listed) {
      ++unlisted;
      continue;
    }
    Goroutine r;
    r.id = p.id;
    r.status = std::string(kStatusNames[kGwaiting]);
    r.wait_reason = reasons[fieldOf<std::uint8_t>(p.g, layout->waitreason)];
    r.frames = framesOf(binary, bias, memory, fieldOf<std::uint64_t>(p.g, layout->sched_pc),
                        fieldOf<std::uint64_t>(p.g, layout->sched_bp),
                        fieldOf<std::uint64_t>(p.g, layout->stack_lo),
                        fieldOf<std::uint64_t>(p.g, layout->stack_hi), limits.max_frames);
    auto wait = goWaitOf(r.wait_reason, r.frames);
    r.waits_on = std::move(wait.waits_on);
    r.lock_wait = wait.lock;
    // The runtime notes since when only when a GC finds the goroutine waiting (its start).
    const auto since = fieldOf<std::int64_t>(p.g, layout->waitsince);
    if (since > 0 && since <= monotonic_now.count()) {
      r.waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          monotonic_now - std::chrono::nanoseconds(since));
    }
    out.blocked.push_back(std::move(r));
  }
  if (unlisted > 0) {
    out.note += (out.note.empty() ? "" : "; ") + std::to_string(unlisted) +
                " more waiting goroutines are not listed";
  }
  return out;
}

bool isGoRuntimeThread(const ThreadSample& thread) {
  return thread.wait && thread.wait->name.str() == kGoSchedulerKind;
}

namespace {

/// Go binaries already read, by file; bounded.
class GoBinaryCache {
 public:
  std::shared_ptr<const GoBinary> get(int fd, const std::string& module) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return nullptr;
    const Key key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    {
      std::lock_guard lock(mutex_);
      if (auto it = binaries_.find(key); it != binaries_.end()) return it->second;
    }
    auto binary = loadGoBinary(fd);
    binary.module = module;
    auto shared = std::make_shared<const GoBinary>(std::move(binary));
    std::lock_guard lock(mutex_);
    if (binaries_.size() >= kMaxBinaries) binaries_.clear();
    return binaries_.emplace(key, std::move(shared)).first->second;
  }

 private:
  using Key = std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t, std::int64_t>;
  static constexpr std::size_t kMaxBinaries = 64;
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const GoBinary>> binaries_;
};

class ProcessGoMemory final : public GoMemory {
 public:
  explicit ProcessGoMemory(Pid pid) : pid_(pid) {}
  bool read(std::uint64_t addr, std::span<std::byte> out) override {
    return readMemory(pid_, addr, out) == MemoryAccess::kOk;
  }

 private:
  Pid pid_;
};

/// AT_ENTRY of the process's auxiliary vector: where its executable's entry point was loaded.
std::optional<std::uint64_t> loadedEntry(const std::string& base) {
  std::array<char, 4096> buf{};
  const long n = readSmallFile(AT_FDCWD, (base + "/auxv").c_str(), buf);
  constexpr std::uint64_t kAtEntry = 9;
  for (long at = 0; at + 16 <= n; at += 16) {
    std::array<std::uint64_t, 2> pair{};
    std::memcpy(pair.data(), buf.data() + at, sizeof(pair));
    if (pair[0] == kAtEntry) return pair[1];
    if (pair[0] == 0) break;
  }
  return std::nullopt;
}

}  // namespace

void applyGoRuntime(ProcessSample& process) {
  const auto& threads = process.threads;
  const bool scheduler = std::any_of(threads.begin(), threads.end(), isGoRuntimeThread);
  if (!scheduler && std::none_of(threads.begin(), threads.end(), [](const ThreadSample& t) {
        return t.wait && t.wait->type == ObjectType::kFutex;
      })) {
    return;
  }
  static GoBinaryCache cache;
  const auto base = "/proc/" + std::to_string(process.pid.value);
  UniqueFd exe(::open((base + "/exe").c_str(), O_RDONLY | O_CLOEXEC));
  const auto binary = exe.valid() ? cache.get(exe.get(), process.name) : nullptr;
  // Without the scheduler's call sites, only the executable's build information says Go.
  if (!scheduler && (binary == nullptr || !binary->go)) return;
  GoProgram go;
  const auto entry = loadedEntry(base);
  if (binary == nullptr || !entry) {
    go = notVisible("", "its executable or its memory cannot be read");
  } else {
    ProcessGoMemory memory(process.pid);
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    go = readGoProgram(*binary, *entry - binary->entry, memory,
                       std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec));
  }
  go.pid = process.pid;
  process.go = std::move(go);
}

}  // namespace wctmon::linux_platform
