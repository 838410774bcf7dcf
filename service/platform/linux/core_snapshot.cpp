// A core is one moment of a process, kept: the same classification as a live sample runs on it
// (wait_classifier.h), with the core's memory and registers for the process's, and no answer
// where a live read would ask the system (CoreWaitLookup).
#include "platform/linux/core_snapshot.h"

#include <sys/syscall.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "platform/linux/code_map.h"
#include "platform/linux/core_memory.h"
#include "platform/linux/core_wait_lookup.h"
#include "platform/linux/syscall_names.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/wait_classifier.h"
#include "platform/linux/wait_classifier_internal.h"
#include "wire/elf_core.h"

namespace wctmon::linux_platform {
namespace {

constexpr std::uint32_t kPfX = 1;

/// The mapping of the core's executable: the first file whose name starts as the process's
/// command name does (which the kernel cuts to 15 characters), else the first file mapped.
std::optional<std::string> executablePath(const CoreProcess& process) {
  for (const auto& file : process.files) {
    const auto base = std::filesystem::path(file.path).filename().string();
    if (!process.name.empty() && base.starts_with(process.name)) return file.path;
  }
  if (process.files.empty()) return std::nullopt;
  return process.files.front().path;
}

/// The file mappings with their paths as they are to be opened now: the executable's replaced
/// by `exe` when given. Says which files are gone.
std::vector<CoreFileMapping> filesNow(const CoreProcess& process, const std::filesystem::path& exe,
                                      std::vector<std::string>& warnings) {
  auto files = process.files;
  const auto executable = executablePath(process);
  std::set<std::string> missing;
  for (auto& file : files) {
    if (!exe.empty() && executable && file.path == *executable) file.path = exe.string();
    std::error_code ec;
    if (!std::filesystem::exists(file.path, ec)) missing.insert(file.path);
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& path : missing) names += (names.empty() ? "" : ", ") + path;
    warnings.push_back("files the core maps are not where it says (" + names +
                       "): their code is not known, and waits in it may be named less well" +
                       (executable && missing.contains(*executable)
                            ? "; give the executable's path now with --exe"
                            : ""));
  }
  return files;
}

/// The executable mappings of `files`, as the core's segments mark them; a mapping no segment
/// describes is taken as well (its symbols name only code).
std::vector<CodeMap::MappedFile> codeMappings(const std::vector<CoreFileMapping>& files,
                                              const wire::ElfCore& core) {
  std::vector<CodeMap::MappedFile> out;
  for (const auto& file : files) {
    const auto load = std::find_if(core.loads.begin(), core.loads.end(), [&](const auto& l) {
      return l.vaddr <= file.begin && file.begin - l.vaddr < l.memsz;
    });
    if (load != core.loads.end() && (load->flags & kPfX) == 0) continue;
    out.push_back({FileMapping{file.begin, file.end, file.offset}, file.path});
  }
  return out;
}

/// One thread of the core as a task reading: asleep in its system call, or running.
TaskReading readingOf(Pid pid, const std::string& name, const CoreThread& thread) {
  TaskReading out;
  out.sample.id = ThreadRef{pid, Tid{thread.tid}};
  // A core keeps no thread's name: only the main thread's is known, the process's.
  if (thread.tid == pid.value) out.sample.name = name;
  // Nothing in a core runs again: every re-read finds a thread where it was.
  out.sample.context_switches = 0;
  out.syscall = syscallStateOf(thread.regs);
  const bool in_call = out.syscall->kind == SyscallState::Kind::kInSyscall;
  out.sample.state = in_call ? RunState::kSleeping : RunState::kRunning;
  out.sample.status = in_call ? ObjectStatus::kBlocked : ObjectStatus::kRunning;
  return out;
}

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(signal);
}

}  // namespace

std::optional<WaitObject> waitNotKnowableFromCore(const SyscallState& sc) {
  if (sc.kind != SyscallState::Kind::kInSyscall) return std::nullopt;
  const auto fd = std::to_string(static_cast<int>(sc.args[0]));
  const auto call = syscallName(sc.number);
  ObjectType type = ObjectType::kUnknown;
  std::string name = "fd " + fd;
  std::string what;
  switch (sc.number) {
    case SYS_read:
    case SYS_readv:
    case SYS_pread64:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_write:
    case SYS_writev:
    case SYS_pwrite64:
    case SYS_pwritev:
    case SYS_pwritev2:
      what = "a pipe, socket or file: which processes hold its other end";
      break;
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_recvmmsg:
    case SYS_sendto:
    case SYS_sendmsg:
    case SYS_sendmmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_connect:
      type = ObjectType::kSocketIo;
      what = "a socket: which processes hold its peer";
      break;
    case SYS_flock:
      type = ObjectType::kFileLock;
      what = "a file lock: which processes hold it";
      break;
    case SYS_fcntl:
      if (static_cast<int>(sc.args[1]) != kFSetLkw && static_cast<int>(sc.args[1]) != kFOfdSetLkw) {
        return std::nullopt;
      }
      type = ObjectType::kFileLock;
      what = "a file lock: which processes hold it";
      break;
    case SYS_wait4:
    case SYS_waitid:
      type = ObjectType::kProcessWait;
      name = "children";
      what = "a wait for a child: which children it had and what they did";
      break;
    case SYS_semop:
    case SYS_semtimedop:
      type = ObjectType::kUnownedLock;
      name = "SysV semaphore set " + fd;
      what = "a SysV semaphore: which process last used it";
      break;
    default:
      return std::nullopt;
  }
  auto w = noOwner(type, name,
                   call + " on " + name + ", " + what + " (who can end the wait) is " +
                       std::string(kNotKnowableFromCore) +
                       ": a core holds no descriptors, "
                       "locks or other processes");
  w.status = ObjectStatus::kUnknown;
  return w;
}

Result<Snapshot> readCoreSnapshot(const DumpToRead& what) {
  const auto& path = what.dump;
  auto core = wire::readElfCore(path);
  if (!core) return core.error();
  if (core->machine != wire::kElfMachineX86_64) {
    return makeError(ErrorCode::kUnsupported,
                     path.string() + " is a core of another machine (ELF machine " +
                         std::to_string(core->machine) + "); only x86-64 cores are read");
  }
  auto process = readCoreProcess(core->notes);
  if (!process)
    return makeError(process.error().code, path.string() + ": " + process.error().message);
  if (!what.executable.empty() && !std::filesystem::is_regular_file(what.executable)) {
    return makeError(ErrorCode::kNotFound,
                     "the executable " + what.executable.string() + " is not a file");
  }

  Snapshot snapshot;
  auto files = filesNow(*process, what.executable, snapshot.warnings);
  const auto code = CodeMap::fromFiles(codeMappings(files, *core));
  auto memory = CoreMemory::open(path, *core, std::move(files));
  if (!memory) return memory.error();
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(path, ec);
  const auto taken_at = ec ? std::chrono::system_clock::now()
                           : std::chrono::time_point_cast<std::chrono::system_clock::duration>(
                                 std::chrono::file_clock::to_sys(written));

  const Pid pid{process->pid};
  std::vector<TaskReading> threads;
  threads.reserve(process->threads.size());
  bool unknowable = false;
  // The kernel gives every thread of a core the signal it was written on; the thread that took
  // it comes first.
  const auto signalled = std::find_if(process->threads.begin(), process->threads.end(),
                                      [](const CoreThread& t) { return t.signal != 0; });
  if (signalled != process->threads.end()) {
    snapshot.warnings.push_back("the core was written on " + signalName(signalled->signal) +
                                ", taken by thread " + std::to_string(signalled->tid));
  }
  for (const auto& thread : process->threads) {
    auto reading = readingOf(pid, process->name, thread);
    if (auto w = waitNotKnowableFromCore(*reading.syscall)) {
      // Classified here: a live read's answer would come from the system this is read on.
      reading.sample.wait = std::move(*w);
      reading.sample.wait->alertable = true;
      reading.syscall.reset();
      unknowable = true;
    }
    threads.push_back(std::move(reading));
  }
  std::sort(threads.begin(), threads.end(), [](const TaskReading& a, const TaskReading& b) {
    return a.sample.id.tid.value < b.sample.id.tid.value;
  });
  CoreWaitLookup lookup(*process, *memory, code, taken_at);
  classifyWaits(pid, threads, lookup);
  if (unknowable) {
    snapshot.warnings.push_back(
        "read from a core: who holds the pipes, sockets and file locks its threads wait on, and "
        "what its children did, is " +
        std::string(kNotKnowableFromCore));
  }

  ProcessSample sample;
  sample.pid = pid;
  sample.name = process->name;
  sample.threads.reserve(threads.size());
  for (auto& thread : threads) sample.threads.push_back(std::move(thread.sample));
  snapshot.processes.push_back(std::move(sample));
  return snapshot;
}

}  // namespace wctmon::linux_platform
