// A core's notes and registers read into threads, system calls and file mappings, from canned
// bytes laid out as the kernel and gcore lay them out.
#include "platform/linux/core_notes.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/procfs.h>
#include <sys/syscall.h>

#include <cstring>
#include <string>
#include <vector>

#include "platform/linux/core_snapshot.h"

namespace wctmon::linux_platform {
namespace {

wire::ElfNote note(std::uint32_t type, const void* data, std::size_t size,
                   std::string owner = "CORE") {
  return wire::ElfNote{std::move(owner), type, std::string(static_cast<const char*>(data), size)};
}

wire::ElfNote threadNote(std::int32_t tid, const user_regs_struct& regs, int signal = 0) {
  elf_prstatus status{};
  status.pr_pid = tid;
  status.pr_cursig = static_cast<short>(signal);
  std::memcpy(&status.pr_reg, &regs, sizeof regs);
  return note(NT_PRSTATUS, &status, sizeof status);
}

std::string fileNote(const std::vector<CoreFileMapping>& files, std::uint64_t page = 4096) {
  std::string out;
  const auto put = [&](std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); };
  put(files.size());
  put(page);
  for (const auto& f : files) {
    put(f.begin);
    put(f.end);
    put(f.offset / page);
  }
  for (const auto& f : files) out += f.path + '\0';
  return out;
}

user_regs_struct futexWait() {
  user_regs_struct regs{};
  regs.orig_rax = SYS_futex;
  regs.rax = static_cast<unsigned long long>(-512);  // -ERESTARTSYS: stopped in the call
  regs.rdi = 0x5600'0000'1000;
  regs.rsi = 0x80;  // FUTEX_WAIT_PRIVATE
  regs.rdx = 2;
  regs.r10 = 0;
  regs.r8 = 8;
  regs.r9 = 9;
  regs.rsp = 0x7ffd'0000'0000;
  regs.rip = 0x7f00'0000'1234;
  regs.rbx = 0x1111;
  regs.r12 = 0x2222;
  return regs;
}

TEST(CoreNotes, ASleepingThreadIsInItsSystemCallWithTheArgumentsOfItsRegisters) {
  const auto sc = syscallStateOf(futexWait());
  EXPECT_EQ(sc.kind, SyscallState::Kind::kInSyscall);
  EXPECT_EQ(sc.number, SYS_futex);
  EXPECT_EQ(sc.args, (std::array<std::uint64_t, 6>{0x5600'0000'1000, 0x80, 2, 0, 8, 9}));
  EXPECT_EQ(sc.sp, 0x7ffd'0000'0000U);
  EXPECT_EQ(sc.pc, 0x7f00'0000'1234U);
}

TEST(CoreNotes, ATimedFutexWaitRestartedAfterAStopKeepsRestartSyscallAndTheFutexArguments) {
  auto regs = futexWait();
  regs.orig_rax = SYS_restart_syscall;
  regs.rax = static_cast<unsigned long long>(-516);  // -ERESTART_RESTARTBLOCK
  const auto sc = syscallStateOf(regs);
  EXPECT_EQ(sc.kind, SyscallState::Kind::kInSyscall);
  EXPECT_EQ(sc.number, SYS_restart_syscall);
  EXPECT_EQ(sc.args[0], 0x5600'0000'1000U);  // FutexWaits::isRestartedFutexWait reads these
}

TEST(CoreNotes, AThreadOutsideASystemCallRuns) {
  auto regs = futexWait();
  regs.orig_rax = ~0ULL;  // -1: interrupted in user space
  const auto sc = syscallStateOf(regs);
  EXPECT_EQ(sc.kind, SyscallState::Kind::kRunning);
  EXPECT_EQ(sc.pc, 0x7f00'0000'1234U);
}

TEST(CoreNotes, TheProcessItsThreadsAndItsFilesComeFromTheNotes) {
  elf_prpsinfo info{};
  info.pr_pid = 4242;
  info.pr_ppid = 1;
  std::strcpy(info.pr_fname, "server");
  std::strcpy(info.pr_psargs, "/usr/bin/server --port 80");
  const std::vector<CoreFileMapping> files = {
      {0x5600'0000'0000, 0x5600'0000'2000, 0, "/usr/bin/server"},
      {0x7f00'0000'0000, 0x7f00'0010'0000, 0x28000, "/lib/x86_64-linux-gnu/libc.so.6"}};
  const auto file_note = fileNote(files);
  const std::vector<wire::ElfNote> notes = {
      note(NT_PRPSINFO, &info, sizeof info), threadNote(4242, futexWait()),
      threadNote(4243, futexWait(), 6), note(0x46494c45, file_note.data(), file_note.size()),
      wire::ElfNote{"LINUX", NT_PRSTATUS, "not a thread: another owner"}};
  const auto process = readCoreProcess(notes);
  ASSERT_TRUE(process) << process.error().message;
  EXPECT_EQ(process->pid, 4242);
  EXPECT_EQ(process->ppid, 1);
  EXPECT_EQ(process->name, "server");
  EXPECT_EQ(process->args, "/usr/bin/server --port 80");
  ASSERT_EQ(process->threads.size(), 2U);
  EXPECT_EQ(process->threads[1].tid, 4243);
  EXPECT_EQ(process->threads[1].signal, 6);
  EXPECT_EQ(process->threads[0].regs.rdi, 0x5600'0000'1000U);
  ASSERT_EQ(process->files.size(), 2U);
  EXPECT_EQ(process->files[1].path, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(process->files[1].offset, 0x28000U);
  EXPECT_EQ(process->files[0].end, 0x5600'0000'2000U);
  const auto parked = parkedRegisterValues(process->threads[0].regs);
  EXPECT_EQ(parked.front(), 0x1111U);  // rbx first
  EXPECT_NE(std::find(parked.begin(), parked.end(), 0x2222U), parked.end());
}

TEST(CoreNotes, ACoreWithoutThreadsOrWithNotesCutShortIsAnError) {
  EXPECT_FALSE(readCoreProcess({}));
  elf_prstatus status{};
  EXPECT_FALSE(readCoreProcess(std::vector{note(NT_PRSTATUS, &status, sizeof status - 8)}));
  auto file_note = fileNote({{0x1000, 0x2000, 0, "/bin/x"}});
  file_note.pop_back();  // the path's NUL
  const std::vector<wire::ElfNote> notes = {threadNote(1, futexWait()),
                                            note(0x46494c45, file_note.data(), file_note.size())};
  EXPECT_FALSE(readCoreProcess(notes));
  // A count that the note cannot hold.
  auto huge = fileNote({});
  const std::uint64_t count = 1ULL << 60;
  std::memcpy(huge.data(), &count, 8);
  EXPECT_FALSE(readCoreProcess(
      std::vector{threadNote(1, futexWait()), note(0x46494c45, huge.data(), huge.size())}));
}

TEST(CoreNotes, WaitsWhoseHoldersOnlyTheSystemKnowsSaySoInsteadOfGuessing) {
  SyscallState sc;
  sc.kind = SyscallState::Kind::kInSyscall;
  sc.number = SYS_read;
  sc.args[0] = 3;
  auto w = waitNotKnowableFromCore(sc);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->status, ObjectStatus::kUnknown);
  EXPECT_TRUE(w->owner_processes.empty());
  EXPECT_EQ(w->name.str(), "fd 3");
  EXPECT_NE(w->detail.str().find("not knowable from a core"), std::string::npos) << w->detail.str();

  sc.number = SYS_flock;
  ASSERT_TRUE(waitNotKnowableFromCore(sc));
  EXPECT_EQ(waitNotKnowableFromCore(sc)->type, ObjectType::kFileLock);
  sc.number = SYS_wait4;
  EXPECT_EQ(waitNotKnowableFromCore(sc)->type, ObjectType::kProcessWait);
  sc.number = SYS_fcntl;
  sc.args[1] = 7;  // F_SETLKW
  EXPECT_TRUE(waitNotKnowableFromCore(sc));
  sc.args[1] = 1;  // F_GETFD: no wait
  EXPECT_FALSE(waitNotKnowableFromCore(sc));
  // What the core's memory explains is left to the classifier.
  sc.number = SYS_futex;
  EXPECT_FALSE(waitNotKnowableFromCore(sc));
  sc.number = SYS_nanosleep;
  EXPECT_FALSE(waitNotKnowableFromCore(sc));
  sc.number = SYS_read;
  sc.kind = SyscallState::Kind::kRunning;
  EXPECT_FALSE(waitNotKnowableFromCore(sc));
}

}  // namespace
}  // namespace wctmon::linux_platform
