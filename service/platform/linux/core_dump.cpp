#include "platform/linux/core_dump.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/procfs.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "model/snapshot.h"
#include "os/durable_file.h"
#include "os/unique_fd.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/ptrace_stop.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

constexpr std::uint64_t kPage = 4096;
/// How much memory one read asks for.
constexpr std::size_t kChunk = 1 << 20;

std::uint64_t roundUp(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

/// A note as the kernel lays one out in a core: header, owner name and data, each 4-byte aligned.
void appendNote(std::string& out, std::string_view name, std::uint32_t type, const void* data,
                std::size_t size) {
  Elf64_Nhdr header{};
  header.n_namesz = static_cast<Elf64_Word>(name.size() + 1);
  header.n_descsz = static_cast<Elf64_Word>(size);
  header.n_type = type;
  const auto pad = [&] { out.resize(roundUp(out.size(), 4), '\0'); };
  out.append(reinterpret_cast<const char*>(&header), sizeof header);
  out.append(name);
  out.push_back('\0');
  pad();
  out.append(static_cast<const char*>(data), size);
  pad();
}

template <typename T>
void appendNote(std::string& out, std::uint32_t type, const T& data) {
  appendNote(out, "CORE", type, &data, sizeof data);
}

std::uint64_t hexField(std::string_view status, std::string_view key) {
  const auto text = statusValue(status, key);
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value, 16);
  return value;
}

/// One thread as the core holds it.
struct ThreadState {
  DumpedThread dumped;
  user_regs_struct regs{};
  user_fpregs_struct fpregs{};
  bool fp_valid = false;
  std::uint64_t sigpend = 0;
  std::uint64_t sighold = 0;
};

/// Reads `thread`'s registers: held for them when the capture's rule allows, otherwise what its
/// blocked system call shows. Nullopt when the thread is gone.
std::optional<ThreadState> readThread(ThreadRef thread) {
  ThreadState s;
  s.dumped.thread = thread;
  const auto sc = syscallOf(thread);
  if (!sc) return std::nullopt;
  std::string why;
  if (const auto tracer = tracerOf(thread); tracer != 0) {
    why = "already traced by process " + std::to_string(tracer);
  } else {
    why = stopHazard(thread, sc);
  }
  if (why.empty()) {
    PtraceStop stop(thread.tid.value);
    why = stop.stop();
    if (why == "thread exited") return std::nullopt;
    if (why.empty()) {
      iovec regs{&s.regs, sizeof s.regs};
      if (::ptrace(PTRACE_GETREGSET, thread.tid.value, reinterpret_cast<void*>(NT_PRSTATUS),
                   &regs) != 0 ||
          regs.iov_len != sizeof s.regs) {
        why = std::string("its registers could not be read: ") + std::strerror(errno);
      } else {
        s.dumped.stopped = true;
        iovec fp{&s.fpregs, sizeof s.fpregs};
        s.fp_valid = ::ptrace(PTRACE_GETREGSET, thread.tid.value,
                              reinterpret_cast<void*>(NT_PRFPREG), &fp) == 0;
      }
    }
    s.dumped.held = stop.release();
  }
  if (!s.dumped.stopped) {
    s.dumped.not_stopped_because = why;
    s.regs = {};
    // Outside a system call orig_rax is -1, as the kernel keeps it: a reader of the core would
    // take 0 for read().
    s.regs.orig_rax = ~0ULL;
    if (sc->kind == SyscallState::Kind::kInSyscall) {
      // As the capture reads such a thread: the call's arguments are still in the registers
      // that passed them, rcx holds the return address.
      s.regs.orig_rax = static_cast<unsigned long long>(sc->number);
      s.regs.rdi = sc->args[0];
      s.regs.rsi = sc->args[1];
      s.regs.rdx = sc->args[2];
      s.regs.r10 = sc->args[3];
      s.regs.r8 = sc->args[4];
      s.regs.r9 = sc->args[5];
      s.regs.rcx = sc->pc;
    }
    s.regs.rip = sc->pc;
    s.regs.rsp = sc->sp;
  }
  const auto status = readWholeFile(
      procPath(thread.pid, "task/" + std::to_string(thread.tid.value) + "/status"), 1 << 16);
  if (status) {
    s.sigpend = hexField(*status, "SigPnd");
    s.sighold = hexField(*status, "SigBlk");
  }
  return s;
}

std::vector<std::int32_t> taskIds(Pid pid) {
  const UniqueFd task(::open(procPath(pid, "task").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task.valid()) return {};
  auto out = listTasks(task.get());
  // The main thread first: a debugger opens the core on the first thread it lists.
  std::stable_partition(out.begin(), out.end(), [&](std::int32_t tid) { return tid == pid.value; });
  return out;
}

/// One mapping of the process and what of it the core holds.
struct Segment {
  MapsRange range;
  std::string path;
  /// Pages of it the process has written (smaps' Anonymous): copies of its file's pages, or
  /// memory of its own.
  bool written = false;
  /// Some of its pages are in memory or swapped out (smaps' Rss and Swap).
  bool populated = false;
  /// Marked not to be dumped (MADV_DONTDUMP, smaps' VmFlags "dd"): ASan's shadow, for one.
  bool dont_dump = false;
  std::uint64_t dump_bytes = 0;
  std::uint64_t file_offset = 0;
};

bool startsWithElfMagic(int mem_fd, std::uint64_t addr) {
  std::array<char, SELFMAG> magic{};
  return ::pread(mem_fd, magic.data(), magic.size(), static_cast<off_t>(addr)) ==
             static_cast<ssize_t>(magic.size()) &&
         std::memcmp(magic.data(), ELFMAG, SELFMAG) == 0;
}

/// What of a mapping is written, as the kernel's default coredump_filter has it: anonymous
/// memory, shared memory with no name left (memfd, SysV), a file's private mapping the process
/// wrote to (data, and what relocation wrote before making it read-only: the dynamic section a
/// debugger finds the libraries through), and the first page of a mapped ELF file (its headers
/// and build id).
std::uint64_t dumpBytes(const Segment& s, int mem_fd, bool file_backed) {
  const auto& r = s.range;
  const std::uint64_t size = r.end - r.begin;
  if (!r.readable || s.dont_dump || s.path.starts_with("[vvar") || s.path == "[vsyscall]") {
    return 0;
  }
  // Memory of its own that was never touched holds nothing a debugger could read.
  if (r.inode == 0 && !s.populated) return 0;
  if (file_backed || r.inode == 0) return size;
  if (r.shared) {
    const bool unnamed = s.path.ends_with(" (deleted)") || s.path.starts_with("/SYSV") ||
                         s.path.starts_with("/dev/zero");
    return unnamed ? size : 0;
  }
  if (r.writable || s.written) return size;
  return r.offset == 0 && startsWithElfMagic(mem_fd, r.begin) ? kPage : 0;
}

/// NT_FILE: the files mapped, as count, page size, then (start, end, offset in pages) of each and
/// their names.
std::string fileNote(const std::vector<Segment>& segments) {
  std::vector<std::uint64_t> header{0, kPage};
  std::string names;
  for (const auto& s : segments) {
    if (s.range.inode == 0 || !s.path.starts_with('/')) continue;
    header.insert(header.end(), {s.range.begin, s.range.end, s.range.offset / kPage});
    names += s.path;
    names.push_back('\0');
    ++header[0];
  }
  std::string out(reinterpret_cast<const char*>(header.data()), header.size() * 8);
  return out + names;
}

char stateLetter(RunState state) {
  switch (state) {
    case RunState::kRunning:
      return 'R';
    case RunState::kSleeping:
      return 'S';
    case RunState::kDiskSleep:
      return 'D';
    case RunState::kStopped:
      return 'T';
    case RunState::kTraced:
      return 't';
    case RunState::kZombie:
      return 'Z';
    default:
      return '.';
  }
}

elf_prpsinfo processInfo(Pid pid, const StatFields& stat) {
  elf_prpsinfo info{};
  info.pr_sname = stateLetter(stat.state);
  info.pr_zomb = stat.state == RunState::kZombie;
  info.pr_flag = stat.flags;
  info.pr_pid = pid.value;
  info.pr_ppid = stat.ppid;
  info.pr_pgrp = stat.pgrp;
  info.pr_sid = ::getsid(pid.value);
  if (const auto status = readWholeFile(procPath(pid, "status"), 1 << 16)) {
    info.pr_uid = static_cast<unsigned>(numberAt(statusValue(*status, "Uid"), 0).value_or(0));
    info.pr_gid = static_cast<unsigned>(numberAt(statusValue(*status, "Gid"), 0).value_or(0));
  }
  std::strncpy(info.pr_fname, stat.comm.c_str(), sizeof info.pr_fname - 1);
  auto args = readWholeFile(procPath(pid, "cmdline"), sizeof info.pr_psargs).value_or("");
  std::replace(args.begin(), args.end(), '\0', ' ');
  while (!args.empty() && args.back() == ' ') args.pop_back();
  std::strncpy(info.pr_psargs, args.c_str(), sizeof info.pr_psargs - 1);
  return info;
}

elf_prstatus threadStatus(const ThreadState& t, const StatFields& stat, int sid) {
  elf_prstatus status{};
  status.pr_sigpend = t.sigpend;
  status.pr_sighold = t.sighold;
  status.pr_pid = t.dumped.thread.tid.value;
  status.pr_ppid = stat.ppid;
  status.pr_pgrp = stat.pgrp;
  status.pr_sid = sid;
  static_assert(sizeof status.pr_reg == sizeof t.regs);
  std::memcpy(&status.pr_reg, &t.regs, sizeof t.regs);
  status.pr_fpvalid = t.fp_valid ? 1 : 0;
  return status;
}

Error ioError(const std::filesystem::path& path, const std::string& what, int error) {
  return makeError(ErrorCode::kIo, "cannot write the dump " + path.string() + ": " + what + ": " +
                                       std::strerror(error));
}

/// Copies `s`'s memory into the core at its offset: in large reads, and page by page where one
/// fails (a page the process cannot read either is left as zeros). Returns the bytes no read
/// reached, or the write's errno.
Result<std::uint64_t> copySegment(Pid pid, int mem_fd, int pagemap_fd, int out_fd, const Segment& s,
                                  std::vector<char>& buffer, const std::filesystem::path& path) {
  std::uint64_t unreadable = 0;
  std::vector<std::uint64_t> entries(kChunk / kPage);
  for (std::uint64_t done = 0; done < s.dump_bytes;) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, s.dump_bytes - done));
    const std::uint64_t addr = s.range.begin + done;
    // A chunk none of whose pages is in memory or swap (pagemap's bits 63 and 62) is zeros: it
    // is left as a hole in the file, unread. Without pagemap, every chunk is read.
    const auto bytes = n / kPage * sizeof(std::uint64_t);
    if (pagemap_fd >= 0 &&
        ::pread(pagemap_fd, entries.data(), bytes, static_cast<off_t>(addr / kPage * 8)) ==
            static_cast<ssize_t>(bytes) &&
        std::none_of(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(n / kPage),
                     [](std::uint64_t e) { return (e >> 62) != 0; })) {
      done += n;
      continue;
    }
    std::fill_n(buffer.begin(), n, '\0');
    iovec local{buffer.data(), n};
    iovec remote{reinterpret_cast<void*>(addr), n};
    ssize_t got = ::process_vm_readv(pid.value, &local, 1, &remote, 1, 0);
    std::size_t read = got > 0 ? static_cast<std::size_t>(got) : 0;
    for (std::size_t at = read; at < n; at += kPage) {
      const auto page = std::min<std::size_t>(kPage, n - at);
      if (::pread(mem_fd, buffer.data() + at, page, static_cast<off_t>(addr + at)) !=
          static_cast<ssize_t>(page)) {
        std::fill_n(buffer.begin() + static_cast<std::ptrdiff_t>(at), page, '\0');
        unreadable += page;
      }
    }
    // Pages of zeros are holes: a file system with sparse files keeps no blocks for them. Each
    // run of other pages is one write.
    const auto zero = [&](std::size_t page) {
      const char* data = buffer.data() + page;
      return std::all_of(data, data + std::min<std::size_t>(kPage, n - page),
                         [](char c) { return c == '\0'; });
    };
    for (std::size_t page = 0; page < n;) {
      if (zero(page)) {
        page += kPage;
        continue;
      }
      std::size_t end = page + kPage;
      while (end < n && !zero(end)) end += kPage;
      end = std::min(end, n);
      for (std::size_t at = page; at < end;) {
        const ssize_t w = ::pwrite(out_fd, buffer.data() + at, end - at,
                                   static_cast<off_t>(s.file_offset + done + at));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return ioError(path, "its memory", w < 0 ? errno : ENOSPC);
        at += static_cast<std::size_t>(w);
      }
      page = end;
    }
    done += n;
  }
  return unreadable;
}

bool writeAll(int fd, const std::string& data, std::uint64_t offset) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t w =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

Result<CoreDump> writeCore(Pid pid, const std::filesystem::path& path, int out_fd,
                           const CoreDumpOptions& options) {
  const auto stat_text = readWholeFile(procPath(pid, "stat"), 4096);
  const auto stat = stat_text ? parseStat(*stat_text) : std::nullopt;
  if (!stat) {
    return makeError(ErrorCode::kNoSuchProcess, "no process " + std::to_string(pid.value));
  }
  UniqueFd mem(::open(procPath(pid, "mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid()) {
    return makeError(errno == ENOENT ? ErrorCode::kNoSuchProcess : ErrorCode::kAccessDenied,
                     "cannot read the memory of process " + std::to_string(pid.value) + ": " +
                         std::strerror(errno));
  }
  {
    UniqueFd exe(::open(procPath(pid, "exe").c_str(), O_RDONLY | O_CLOEXEC));
    std::array<unsigned char, EI_NIDENT> ident{};
    if (exe.valid() && ::pread(exe.get(), ident.data(), ident.size(), 0) == EI_NIDENT &&
        ident[EI_CLASS] == ELFCLASS32) {
      return makeError(ErrorCode::kUnsupported,
                       "process " + std::to_string(pid.value) +
                           " is a 32-bit program: its core is not written (64-bit only)");
    }
  }

  CoreDump out;
  std::vector<ThreadState> threads;
  for (const auto tid : taskIds(pid)) {
    if (auto t = readThread(ThreadRef{pid, Tid{tid}})) threads.push_back(std::move(*t));
  }
  if (threads.empty()) {
    return makeError(ErrorCode::kNoSuchProcess,
                     "process " + std::to_string(pid.value) + " has no thread left to dump");
  }

  // smaps: the mappings as maps lists them, each followed by its figures.
  const auto smaps = readWholeFile(procPath(pid, "smaps"), 256 << 20);
  if (!smaps) {
    return makeError(ErrorCode::kNoSuchProcess,
                     "cannot read the mappings of process " + std::to_string(pid.value));
  }
  std::vector<Segment> segments;
  for (std::string_view rest = *smaps; !rest.empty();) {
    const auto nl = rest.find('\n');
    const auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (auto range = parseMapsLine(line)) {
      Segment s{*range, std::string(range->path)};
      s.range.path = {};
      segments.push_back(std::move(s));
    } else if (segments.empty()) {
      continue;
    } else if (line.starts_with("Anonymous:")) {
      segments.back().written = numberAt(line.substr(10), 0).value_or(0) > 0;
    } else if (line.starts_with("Rss:") || line.starts_with("Swap:")) {
      const auto colon = line.find(':');
      if (numberAt(line.substr(colon + 1), 0).value_or(0) > 0) segments.back().populated = true;
    } else if (line.starts_with("VmFlags:")) {
      segments.back().dont_dump =
          (std::string(line.substr(8)) + " ").find(" dd ") != std::string::npos;
    }
  }
  std::erase_if(segments, [](const Segment& s) { return s.path == "[vsyscall]"; });
  for (auto& s : segments) s.dump_bytes = dumpBytes(s, mem.get(), options.file_backed);
  if (segments.size() + 1 >= PN_XNUM) {
    return makeError(ErrorCode::kUnsupported, "process " + std::to_string(pid.value) + " has " +
                                                  std::to_string(segments.size()) +
                                                  " mappings, more than a core's header holds");
  }

  // The notes: the process, then each thread (its status, then its FP state), then what is
  // whole-process (signal, auxiliary vector, files) and the diagnosis.
  std::string notes;
  appendNote(notes, NT_PRPSINFO, processInfo(pid, *stat));
  const int sid = ::getsid(pid.value);
  for (const auto& t : threads) {
    appendNote(notes, NT_PRSTATUS, threadStatus(t, *stat, sid));
    if (t.fp_valid) appendNote(notes, NT_PRFPREG, t.fpregs);
  }
  const siginfo_t siginfo{};  // taken while running: no signal
  appendNote(notes, NT_SIGINFO, siginfo);
  const auto auxv = readWholeFile(procPath(pid, "auxv"), 1 << 16).value_or("");
  appendNote(notes, "CORE", NT_AUXV, auxv.data(), auxv.size());
  const auto files = fileNote(segments);
  appendNote(notes, "CORE", NT_FILE, files.data(), files.size());
  if (!options.diagnosis.empty()) {
    appendNote(notes, kDumpDiagnosisOwner, kDumpDiagnosisType, options.diagnosis.data(),
               options.diagnosis.size());
  }

  const std::uint64_t headers = sizeof(Elf64_Ehdr) + (segments.size() + 1) * sizeof(Elf64_Phdr);
  std::uint64_t cursor = roundUp(headers + notes.size(), kPage);
  for (auto& s : segments) {
    s.file_offset = cursor;
    if (options.max_bytes != 0 && cursor + s.dump_bytes > options.max_bytes) {
      const auto room = options.max_bytes > cursor ? options.max_bytes - cursor : 0;
      s.dump_bytes = room / kPage * kPage;
      out.cut = true;
    }
    cursor += s.dump_bytes;
  }

  std::vector<char> buffer(kChunk);
  const UniqueFd pagemap(::open(procPath(pid, "pagemap").c_str(), O_RDONLY | O_CLOEXEC));
  for (const auto& s : segments) {
    if (s.dump_bytes == 0) continue;
    auto unreadable = copySegment(pid, mem.get(), pagemap.get(), out_fd, s, buffer, path);
    if (!unreadable) return unreadable.error();
    out.unreadable_bytes += *unreadable;
  }

  Elf64_Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = ELFCLASS64;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_ident[EI_OSABI] = ELFOSABI_NONE;
  ehdr.e_type = ET_CORE;
  ehdr.e_machine = EM_X86_64;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_phoff = sizeof(Elf64_Ehdr);
  ehdr.e_ehsize = sizeof(Elf64_Ehdr);
  ehdr.e_phentsize = sizeof(Elf64_Phdr);
  ehdr.e_phnum = static_cast<Elf64_Half>(segments.size() + 1);
  std::string head(reinterpret_cast<const char*>(&ehdr), sizeof ehdr);
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = headers;
  note.p_filesz = notes.size();
  note.p_align = 4;
  head.append(reinterpret_cast<const char*>(&note), sizeof note);
  for (const auto& s : segments) {
    Elf64_Phdr load{};
    load.p_type = PT_LOAD;
    load.p_flags = (s.range.readable ? PF_R : 0) | (s.range.writable ? PF_W : 0) |
                   (s.range.executable ? PF_X : 0);
    load.p_offset = s.file_offset;
    load.p_vaddr = s.range.begin;
    load.p_filesz = s.dump_bytes;
    load.p_memsz = s.range.end - s.range.begin;
    load.p_align = kPage;
    head.append(reinterpret_cast<const char*>(&load), sizeof load);
  }
  head += notes;
  if (!writeAll(out_fd, head, 0) || ::ftruncate(out_fd, static_cast<off_t>(cursor)) != 0 ||
      ::fsync(out_fd) != 0) {
    return ioError(path, "its headers", errno != 0 ? errno : ENOSPC);
  }
  // Gone while it was read: its memory may be half zeros, and nothing can say which half.
  if (::access(procPath(pid, "stat").c_str(), F_OK) != 0) {
    return makeError(ErrorCode::kNoSuchProcess,
                     "process " + std::to_string(pid.value) + " exited while it was dumped");
  }
  out.bytes = cursor;
  for (auto& t : threads) out.threads.push_back(std::move(t.dumped));
  return out;
}

}  // namespace

Result<CoreDump> writeCoreDump(Pid pid, const std::filesystem::path& path,
                               const CoreDumpOptions& options) {
  // Written under another name and given its own only whole: a writer killed midway leaves a
  // .partial file, never a core that looks whole and is not.
  std::error_code ec;
  if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
    return ioError(path, "cannot create it", EEXIST);
  }
  auto partial = path;
  partial += ".partial";
  UniqueFd fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return ioError(partial, "cannot create it", errno);
  auto written = writeCore(pid, path, fd.get(), options);
  fd.reset();
  if (written) {
    if (const auto linked = linkNoReplace(partial, path)) {
      written = ioError(path, "cannot give it its name", linked.value());
    } else {
      syncDirectory(path.parent_path().empty() ? "." : path.parent_path());
    }
  }
  ::unlink(partial.c_str());
  return written;
}

Result<DumpWritten> CoreDumper::dump(Pid pid, const DumpRequest& request) {
  auto core =
      writeCoreDump(pid, request.path,
                    CoreDumpOptions{request.full_memory, request.max_bytes, request.diagnosis});
  if (!core) return core.error();
  std::size_t held = 0;
  std::chrono::nanoseconds longest{0};
  std::string unstopped;
  for (const auto& t : core->threads) {
    if (t.stopped) {
      ++held;
      longest = std::max(longest, t.held);
    } else {
      unstopped += (unstopped.empty() ? "" : "; ") + std::string("thread ") +
                   std::to_string(t.thread.tid.value) + " (" + t.not_stopped_because + ")";
    }
  }
  std::string method = "ELF core; " + std::to_string(held) +
                       " thread(s) held for their registers, one at a time (the longest " +
                       std::to_string(longest.count() / 1000) + " us)";
  if (!unstopped.empty()) {
    method +=
        "; read without stopping, their registers as their blocked calls show them: " + unstopped;
  }
  if (core->unreadable_bytes > 0) {
    method += "; " + std::to_string(core->unreadable_bytes) +
              " bytes of memory could not be read and are zeros";
  }
  if (core->cut) {
    method += "; cut at its cap of " + std::to_string(request.max_bytes) + " bytes";
  }
  return DumpWritten{core->bytes, "elf-core", std::move(method)};
}

}  // namespace wctmon::linux_platform
