#include "platform/linux/stack_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <span>

#include "platform/linux/demangle.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/process_memory.h"
#include "platform/linux/target_modules.h"

namespace wctmon::linux_platform {
namespace {

struct UnwindState {
  Pid pid;
  Tid tid;
  const StackCopy* copy;
  bool thread_reported = false;
};

/// The debug information the unwinding on this thread may still unpack, and what it left out.
struct UnpackBudget {
  std::uint64_t left = 0;
  std::string note;
  std::set<std::string> refused;  // debug files; elfutils asks once for symbols, once for DWARF
};
thread_local UnpackBudget* unpack_budget = nullptr;

std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b) {
  return b > std::numeric_limits<std::uint64_t>::max() - a
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

/// The bytes that the compressed sections of the ELF file `fd` take once unpacked: sections
/// marked SHF_COMPRESSED, and the older ".zdebug" ones ("ZLIB" and the size, big-endian). The
/// sizes are the file's word, which is all libelf goes by when it unpacks them.
std::uint64_t unpackedSize(int fd) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return 0;
  std::size_t names = 0;
  const bool named = elf_getshdrstrndx(elf, &names) == 0;
  std::uint64_t total = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    if ((shdr.sh_flags & SHF_COMPRESSED) != 0) {
      GElf_Chdr chdr;
      if (gelf_getchdr(scn, &chdr) != nullptr) total = saturatingAdd(total, chdr.ch_size);
      continue;
    }
    const char* name = named ? elf_strptr(elf, names, shdr.sh_name) : nullptr;
    std::array<unsigned char, 12> header{};
    if (name != nullptr && std::strncmp(name, ".zdebug", 7) == 0 &&
        ::pread(fd, header.data(), header.size(), static_cast<off_t>(shdr.sh_offset)) ==
            static_cast<ssize_t>(header.size()) &&
        std::memcmp(header.data(), "ZLIB", 4) == 0) {
      std::uint64_t size = 0;
      for (std::size_t i = 4; i < header.size(); ++i) size = (size << 8) | header[i];
      total = saturatingAdd(total, size);
    }
  }
  elf_end(elf);
  return total;
}

/// Whether the budget of this unwinding takes `size` more bytes of unpacked debug information;
/// if not, the note says which module goes without and why.
bool takeUnpacked(std::uint64_t size, const char* module, const std::string& debug_file) {
  if (unpack_budget == nullptr) return true;
  if (size <= unpack_budget->left) {
    unpack_budget->left -= size;
    return true;
  }
  if (!unpack_budget->refused.insert(debug_file).second) return false;
  auto& note = unpack_budget->note;
  note += note.empty() ? "without source lines for " : ", ";
  note += std::string(module != nullptr ? module : "?") + " (its debug file " + debug_file +
          " unpacks to " + std::to_string(size >> 20) + " MB, over what one unwinding may take)";
  return false;
}

/// The debug file of `module` by its build ID, where elfutils looks first.
std::string buildIdDebugFile(Dwfl_Module* module) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int length = dwfl_module_build_id(module, &bits, &vaddr);
  if (length < 2 || bits == nullptr) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string path = "/usr/lib/debug/.build-id/";
  for (int i = 0; i < length; ++i) {
    path += kHex[bits[i] >> 4];
    path += kHex[bits[i] & 0xF];
    if (i == 0) path += '/';
  }
  return path + ".debug";
}

/// elfutils' search for a module's separate debug file, refusing one that would unpack past
/// what is left of this unwinding's budget (its frames are then named from the module's own
/// symbols). The file found by build ID is weighed before the search: elfutils keeps the one it
/// opens that way whatever this returns.
int findDebuginfo(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
                  const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                  char** debuginfo_file_name) {
  const auto by_id = buildIdDebugFile(module);
  if (!by_id.empty()) {
    const int fd = ::open(by_id.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const auto size = unpackedSize(fd);
      ::close(fd);
      if (!takeUnpacked(size, name, by_id)) return -1;
    }
  }
  const int fd = dwfl_standard_find_debuginfo(module, userdata, name, base, file_name,
                                              debuglink_file, debuglink_crc, debuginfo_file_name);
  if (fd < 0 || *debuginfo_file_name == nullptr || by_id == *debuginfo_file_name) {
    return fd;
  }
  // Found by its debug link, beside the module or under /usr/lib/debug.
  if (takeUnpacked(unpackedSize(fd), name, *debuginfo_file_name)) return fd;
  ::close(fd);
  std::free(*debuginfo_file_name);
  *debuginfo_file_name = nullptr;
  return -1;
}

struct FrameCollector {
  Dwfl* dwfl;
  std::size_t max_frames;
  std::vector<StackFrame> frames;
};

pid_t nextThread(Dwfl*, void* arg, void** thread_arg) {
  auto* state = static_cast<UnwindState*>(arg);
  if (state->thread_reported) return 0;
  state->thread_reported = true;
  *thread_arg = state;
  return state->tid.value;
}

bool getThread(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
  auto* state = static_cast<UnwindState*>(arg);
  if (tid != state->tid.value) return false;
  *thread_arg = state;
  return true;
}

bool memoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  const auto* state = static_cast<UnwindState*>(arg);
  const auto& copy = *state->copy;
  // Every address comes from the target's registers and stack: compared without a sum that
  // could wrap (an address just below 2^64 once passed as inside the copy).
  if (addr >= copy.sp && copy.bytes.size() >= sizeof(Dwarf_Word) &&
      addr - copy.sp <= copy.bytes.size() - sizeof(Dwarf_Word)) {
    std::memcpy(result, copy.bytes.data() + (addr - copy.sp), sizeof(Dwarf_Word));
    return true;
  }
  std::byte buf[sizeof(Dwarf_Word)];
  if (readMemory(state->pid, addr, buf) != MemoryAccess::kOk) return false;
  std::memcpy(result, buf, sizeof(Dwarf_Word));
  return true;
}

bool setInitialRegisters(Dwfl_Thread* thread, void* arg) {
  const auto& copy = *static_cast<UnwindState*>(arg)->copy;
  if (copy.known == StackCopy::kAllRegisters) {
    return dwfl_thread_state_registers(thread, 0, kDwarfRegisterCount, copy.regs);
  }
  // Registers left unset are undefined to the unwinder: a frame that needs one ends the walk
  // instead of following a made-up value.
  for (unsigned r = 0; r < kDwarfRegisterCount; ++r) {
    if ((copy.known & (1U << r)) == 0) continue;
    if (r == kDwarfRip) {
      dwfl_thread_state_register_pc(thread, copy.regs[r]);
    } else if (!dwfl_thread_state_registers(thread, static_cast<int>(r), 1, &copy.regs[r])) {
      return false;
    }
  }
  return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    nextThread, getThread, memoryRead, setInitialRegisters, nullptr, nullptr,
};

/// Where `address` is in the source of the function that the symbol table names: the line table
/// (the module's debug information or its separate debug file), or, when the address is in code
/// inlined into that function, the line of the outermost inlined call (as a debugger shows the
/// function's own frame).
void sourceLine(Dwfl_Module* module, Dwarf_Addr address, StackFrame& frame) {
  Dwfl_Line* line = dwfl_module_getsrc(module, address);
  if (line == nullptr) return;
  int number = 0;
  const char* file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
  if (file == nullptr) return;
  frame.file = file;
  frame.line = static_cast<std::uint32_t>(std::max(number, 0));

  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module, address, &bias);
  if (cu == nullptr) return;
  Dwarf_Die* scopes = nullptr;
  const int count = dwarf_getscopes(cu, address - bias, &scopes);
  if (count <= 0) return;
  std::unique_ptr<Dwarf_Die, decltype(&std::free)> owned(scopes, &std::free);
  // Innermost first: the last inlined call before the enclosing function is the outermost one.
  Dwarf_Die* outermost = nullptr;
  for (int i = 0; i < count; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram) break;
    if (tag == DW_TAG_inlined_subroutine) outermost = &scopes[i];
  }
  if (outermost == nullptr) return;
  Dwarf_Attribute attribute;
  Dwarf_Word file_index = 0;
  Dwarf_Word call_line = 0;
  Dwarf_Files* files = nullptr;
  std::size_t file_count = 0;
  if (dwarf_formudata(dwarf_attr(outermost, DW_AT_call_file, &attribute), &file_index) != 0 ||
      dwarf_formudata(dwarf_attr(outermost, DW_AT_call_line, &attribute), &call_line) != 0 ||
      dwarf_getsrcfiles(cu, &files, &file_count) != 0 || file_index >= file_count) {
    return;
  }
  if (const char* call_file = dwarf_filesrc(files, file_index, nullptr, nullptr)) {
    frame.file = call_file;
    frame.line = static_cast<std::uint32_t>(call_line);
  }
}

/// A frame at `pc`, with its module, function and source line. A return address (not an activation)
/// points after the call: the call itself is looked up.
StackFrame symbolize(Dwfl* dwfl, Dwarf_Addr pc, bool activation) {
  const Dwarf_Addr lookup = activation ? pc : pc - 1;
  StackFrame out;
  out.pc = pc;
  if (Dwfl_Module* module = dwfl_addrmodule(dwfl, lookup)) {
    const char* main_file = nullptr;
    const char* name =
        dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
    // The path as the process names it (its maps), not where it was opened from (through
    // /proc/PID/root).
    out.module = name != nullptr ? name : (main_file != nullptr ? main_file : "");
    GElf_Off offset = 0;
    GElf_Sym sym;
    if (const char* symbol =
            dwfl_module_addrinfo(module, lookup, &offset, &sym, nullptr, nullptr, nullptr)) {
      out.function = demangle(symbol);
      out.offset = offset + (lookup == pc ? 0 : 1);
    }
    sourceLine(module, lookup, out);
  }
  return out;
}

int onFrame(Dwfl_Frame* frame, void* arg) {
  auto* collector = static_cast<FrameCollector*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  collector->frames.push_back(symbolize(collector->dwfl, pc, activation));
  return collector->frames.size() >= collector->max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/// The frame where every stack of a process or thread begins.
bool isOutermost(const StackFrame& f) {
  return f.function == "_start" || f.function == "__clone" || f.function == "__clone3" ||
         f.function == "clone" || f.function == "clone3";
}

/// Executable ranges of the process, from /proc/PID/maps.
std::vector<std::pair<std::uint64_t, std::uint64_t>> executableRanges(Pid pid) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::ifstream maps("/proc/" + std::to_string(pid.value) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (const auto range = parseMapsLine(line); range && range->executable) {
      out.emplace_back(range->begin, range->end);
    }
  }
  return out;
}

/// Whether the bytes before `ret` (the `code` bytes end at it) hold an x86-64 call instruction:
/// call rel32, or an indirect call through a register or memory (with or without a REX prefix).
bool followsCall(const std::array<std::uint8_t, 8>& code) {
  const auto at = [&](int back) { return code[code.size() - static_cast<std::size_t>(back)]; };
  const auto isCallModrm = [](std::uint8_t modrm) { return (modrm & 0x38) == 0x10; };
  if (at(5) == 0xE8) return true;                                                  // call rel32
  if (at(2) == 0xFF && isCallModrm(at(1)) && (at(1) & 0xC0) == 0xC0) return true;  // call reg
  if (at(2) == 0xFF && isCallModrm(at(1)) && (at(1) & 0xC7) < 0x04) return true;   // call [reg]
  if (at(3) == 0xFF && isCallModrm(at(2)) && (at(2) & 0xC0) == 0x40) return true;  // [reg+d8]
  if (at(3) == 0xFF && isCallModrm(at(2)) && (at(2) & 0xC7) == 0x04) return true;  // [sib]
  if (at(4) == 0xFF && at(3) == 0x54) return true;                                 // [sib+d8]
  if (at(6) == 0xFF && (at(5) == 0x15 || (at(5) & 0xF8) == 0x90)) return true;     // [rip/reg+d32]
  if (at(7) == 0xFF && at(6) == 0x94) return true;                                 // [sib+d32]
  return false;
}

/// Appends return addresses found in the stack copy after the last unwound frame.
void scanStack(const UnwindState& state, Dwfl* dwfl, std::size_t max_frames,
               std::vector<StackFrame>& frames) {
  const auto& copy = *state.copy;
  const std::size_t words = copy.bytes.size() / sizeof(std::uint64_t);
  const auto word = [&](std::size_t i) {
    std::uint64_t v = 0;
    std::memcpy(&v, copy.bytes.data() + i * sizeof(v), sizeof(v));
    return v;
  };
  // Resume after the slot that held the last unwound return address (frame 0 is the pc).
  std::size_t from = 0;
  if (frames.size() > 1) {
    for (std::size_t i = 0; i < words; ++i) {
      if (word(i) == frames.back().pc) {
        from = i + 1;
        break;
      }
    }
  }
  const auto ranges = executableRanges(state.pid);
  for (std::size_t i = from; i < words && frames.size() < max_frames; ++i) {
    const std::uint64_t ret = word(i);
    const bool executable = std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) {
      return ret >= r.first + 8 && ret < r.second;
    });
    if (!executable) continue;
    std::array<std::uint8_t, 8> code{};
    if (readMemory(state.pid, ret - code.size(), std::as_writable_bytes(std::span(code))) !=
            MemoryAccess::kOk ||
        !followsCall(code)) {
      continue;
    }
    auto frame = symbolize(dwfl, ret, false);
    frame.scanned = true;
    const bool last = isOutermost(frame);
    frames.push_back(std::move(frame));
    if (last) break;
  }
}

}  // namespace

Unwinding unwindStack(Pid pid, Tid tid, const StackCopy& copy, const UnwindLimits& limits) {
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks kCallbacks = {
      findTargetModule,
      findDebuginfo,
      nullptr,
      &debuginfo_path,
  };
  Unwinding out;
  UnpackBudget budget{limits.unpack_bytes, {}, {}};
  unpack_budget = &budget;
  struct Forget {
    ~Forget() { unpack_budget = nullptr; }
  } forget;
  const TargetModules modules(pid.value);
  std::unique_ptr<Dwfl, decltype(&dwfl_end)> dwfl(dwfl_begin(&kCallbacks), &dwfl_end);
  if (!dwfl) {
    out.error = dwfl_errmsg(-1);
    return out;
  }
  // Modules come from /proc/PID/maps; no ptrace is involved from here on.
  if (dwfl_linux_proc_report(dwfl.get(), pid.value) != 0 ||
      dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0) {
    out.error = std::string("cannot read the modules of the process: ") + dwfl_errmsg(-1);
    return out;
  }
  UnwindState state{pid, tid, &copy};
  if (!dwfl_attach_state(dwfl.get(), nullptr, pid.value, &kThreadCallbacks, &state)) {
    out.error = std::string("cannot start unwinding: ") + dwfl_errmsg(-1);
    return out;
  }
  FrameCollector collector{dwfl.get(), limits.max_frames, {}};
  const bool failed = dwfl_getthread_frames(dwfl.get(), tid.value, onFrame, &collector) == -1;
  if (failed && !limits.scan && collector.frames.size() < 2) {
    out.error = std::string("unwinding stopped: ") + dwfl_errmsg(-1);
  }
  // With registers missing, elfutils ends the walk as if it had reached the outermost frame:
  // only a walk that did reach it (the start of the process or of a thread) is complete.
  if (limits.scan && collector.frames.size() < limits.max_frames &&
      (collector.frames.empty() || !isOutermost(collector.frames.back()))) {
    scanStack(state, dwfl.get(), limits.max_frames, collector.frames);
  }
  out.frames = std::move(collector.frames);
  out.note = std::move(budget.note);
  return out;
}

}  // namespace wctmon::linux_platform
