#include "platform/linux/stack_unwinder.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "platform/linux/process_memory.h"

namespace wctmon::linux_platform {
namespace {

struct UnwindState {
  Pid pid;
  Tid tid;
  const StackCopy* copy;
  bool thread_reported = false;
};

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
  if (addr >= copy.sp && addr + sizeof(Dwarf_Word) <= copy.sp + copy.bytes.size()) {
    std::memcpy(result, copy.bytes.data() + (addr - copy.sp), sizeof(Dwarf_Word));
    return true;
  }
  std::byte buf[sizeof(Dwarf_Word)];
  if (readMemory(state->pid, addr, buf) != MemoryAccess::kOk) return false;
  std::memcpy(result, buf, sizeof(Dwarf_Word));
  return true;
}

bool setInitialRegisters(Dwfl_Thread* thread, void* arg) {
  const auto* state = static_cast<UnwindState*>(arg);
  return dwfl_thread_state_registers(thread, 0, 17, state->copy->regs);
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    nextThread, getThread, memoryRead, setInitialRegisters, nullptr, nullptr,
};

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

int onFrame(Dwfl_Frame* frame, void* arg) {
  auto* collector = static_cast<FrameCollector*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  // A return address points after the call; look up the call itself.
  const Dwarf_Addr lookup = activation ? pc : pc - 1;
  StackFrame out;
  out.pc = pc;
  if (Dwfl_Module* module = dwfl_addrmodule(collector->dwfl, lookup)) {
    const char* main_file = nullptr;
    const char* name =
        dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
    out.module = main_file != nullptr ? main_file : (name != nullptr ? name : "");
    GElf_Off offset = 0;
    GElf_Sym sym;
    if (const char* symbol =
            dwfl_module_addrinfo(module, lookup, &offset, &sym, nullptr, nullptr, nullptr)) {
      out.function = demangle(symbol);
      out.offset = offset + (lookup == pc ? 0 : 1);
    }
  }
  collector->frames.push_back(std::move(out));
  return collector->frames.size() >= collector->max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
}

}  // namespace

std::vector<StackFrame> unwindStack(Pid pid, Tid tid, const StackCopy& copy, std::size_t max_frames,
                                    std::string& error) {
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks kCallbacks = {
      dwfl_linux_proc_find_elf,
      dwfl_standard_find_debuginfo,
      nullptr,
      &debuginfo_path,
  };
  std::unique_ptr<Dwfl, decltype(&dwfl_end)> dwfl(dwfl_begin(&kCallbacks), &dwfl_end);
  if (!dwfl) {
    error = dwfl_errmsg(-1);
    return {};
  }
  // Modules come from /proc/PID/maps; no ptrace is involved from here on.
  if (dwfl_linux_proc_report(dwfl.get(), pid.value) != 0 ||
      dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0) {
    error = std::string("cannot read the modules of the process: ") + dwfl_errmsg(-1);
    return {};
  }
  UnwindState state{pid, tid, &copy};
  if (!dwfl_attach_state(dwfl.get(), nullptr, pid.value, &kThreadCallbacks, &state)) {
    error = std::string("cannot start unwinding: ") + dwfl_errmsg(-1);
    return {};
  }
  FrameCollector collector{dwfl.get(), max_frames, {}};
  if (dwfl_getthread_frames(dwfl.get(), tid.value, onFrame, &collector) == -1 &&
      collector.frames.size() < 2) {
    error = std::string("unwinding stopped: ") + dwfl_errmsg(-1);
  }
  return std::move(collector.frames);
}

}  // namespace wctmon::linux_platform
