// The task files of a thread read into plain structs: from canned text in a directory laid out
// as /proc, and from this very process.
#include "platform/linux/task_reader.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "platform/linux/proc_tree.h"

namespace wctmon::linux_platform {
namespace {

using testing::ProcTree;
using testing::schedstatLine;
using testing::statLine;

constexpr Pid kPid{4242};
constexpr const char* kFutexLine =
    "202 0x5569ba9a5168 0x80 0x2 0x0 0x0 0x0 0x7ffd00001000 0x7f9164635e96\n";

/// A process directory of one fake process: 4242 with the threads it is given.
class TaskReaderTest : public ::testing::Test {
 protected:
  void thread(int tid, char state, std::string_view syscall = {}, std::string_view wchan = {}) {
    const auto dir = "4242/task/" + std::to_string(tid) + "/";
    tree_.write(dir + "stat", statLine(tid, "worker " + std::to_string(tid), state));
    if (!syscall.empty()) tree_.write(dir + "syscall", syscall);
    if (!wchan.empty()) tree_.write(dir + "wchan", wchan);
  }

  TaskReading read(int tid) {
    const UniqueFd task(tree_.openDirectory("4242/task"));
    return readTask(task.get(), kPid, tid);
  }

  ProcTree tree_;
};

TEST_F(TaskReaderTest, AThreadInASystemCallIsBlockedThereWithItsArguments) {
  thread(4243, 'S', kFutexLine, "futex_wait_queue");
  const auto r = read(4243);
  EXPECT_EQ(r.sample.id, (ThreadRef{kPid, Tid{4243}}));
  EXPECT_EQ(r.sample.name, "worker 4243");
  EXPECT_EQ(r.sample.state, RunState::kSleeping);
  EXPECT_EQ(r.sample.status, ObjectStatus::kBlocked);
  ASSERT_TRUE(r.syscall.has_value());
  EXPECT_EQ(r.syscall->kind, SyscallState::Kind::kInSyscall);
  EXPECT_EQ(r.syscall->number, 202);
  EXPECT_EQ(r.syscall->args[0], 0x5569ba9a5168U);
  EXPECT_EQ(r.syscall->sp, 0x7ffd00001000U);
  // The syscall file says where it waits: the wait channel is not read.
  EXPECT_TRUE(r.wchan.empty());
  EXPECT_FALSE(r.sample.wait.has_value());
}

TEST_F(TaskReaderTest, ARunningThreadIsNotAskedWhereItWaits) {
  thread(4243, 'R');  // no syscall file at all: reading it would fail
  const auto r = read(4243);
  EXPECT_EQ(r.sample.status, ObjectStatus::kRunning);
  EXPECT_FALSE(r.syscall.has_value());

  // Asleep by its stat, running again by the time its syscall file is read.
  thread(4244, 'S', "running\n");
  EXPECT_EQ(read(4244).sample.status, ObjectStatus::kRunning);
}

TEST_F(TaskReaderTest, TheWaitChannelIsReadWhereTheSyscallFileDoesNotTell) {
  thread(4243, 'D', kFutexLine, "io_schedule");
  const auto uninterruptible = read(4243);
  EXPECT_EQ(uninterruptible.sample.status, ObjectStatus::kBlocked);
  EXPECT_EQ(uninterruptible.sample.state, RunState::kDiskSleep);
  EXPECT_EQ(uninterruptible.wchan, "io_schedule");

  thread(4244, 'S', "-1 0x7ffd1 0x7f2\n", "do_signal_stop");
  const auto outside = read(4244);
  EXPECT_EQ(outside.sample.status, ObjectStatus::kBlocked);
  ASSERT_TRUE(outside.syscall.has_value());
  EXPECT_EQ(outside.syscall->kind, SyscallState::Kind::kNotInSyscall);
  EXPECT_EQ(outside.wchan, "do_signal_stop");

  thread(4245, 'T', kFutexLine);
  const auto stopped = read(4245);
  EXPECT_EQ(stopped.sample.state, RunState::kStopped);
  EXPECT_EQ(stopped.sample.status, ObjectStatus::kBlocked);
  EXPECT_TRUE(stopped.wchan.empty());
}

TEST_F(TaskReaderTest, AThreadGoneBeforeOrDuringItsReadIsExited) {
  EXPECT_TRUE(isExited(read(4243).sample));  // no such thread at all
  thread(4244, 'S');                         // its stat read, then gone: no syscall file
  const auto r = read(4244);
  EXPECT_TRUE(isExited(r.sample));
  EXPECT_EQ(r.sample.id, (ThreadRef{kPid, Tid{4244}}));
}

TEST_F(TaskReaderTest, StatesWithNothingToWaitOnAndUnreadableSyscallsAreSaidSo) {
  thread(4243, 'Z');
  EXPECT_EQ(read(4243).sample.status, ObjectStatus::kUnknown);
  thread(4244, 'S', "202 0x1 zz\n");
  const auto garbled = read(4244);
  EXPECT_EQ(garbled.sample.status, ObjectStatus::kError);
  EXPECT_FALSE(isExited(garbled.sample));
}

TEST_F(TaskReaderTest, ASyscallFileRefusedIsNoAccess) {
  thread(4243, 'S', kFutexLine);
  ASSERT_EQ(::chmod(tree_.path("4242/task/4243/syscall").c_str(), 0), 0);
  ASSERT_EQ(::chmod(tree_.root().c_str(), 0755), 0);
  if (::geteuid() != 0) {
    EXPECT_EQ(read(4243).sample.status, ObjectStatus::kNoAccess);
    return;
  }
  // Root reads anything: the read is made by a child that gave up root.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(2);
    _exit(read(4243).sample.status == ObjectStatus::kNoAccess ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(TaskReaderTest, RunCountsByPathAndThroughAKeptOpenDescriptor) {
  tree_.write("4242/task/4243/schedstat", schedstatLine(7));
  const UniqueFd task(tree_.openDirectory("4242/task"));
  EXPECT_EQ(readRunCount(task.get(), 4243), 7U);
  EXPECT_FALSE(readRunCount(task.get(), 4244).has_value());

  const UniqueFd kept(::openat(task.get(), "4243/schedstat", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(kept.valid());
  EXPECT_EQ(readSchedTimes(kept.get()).value().runs, 7U);
  tree_.write("4242/task/4243/schedstat", schedstatLine(12));
  EXPECT_EQ(readSchedTimes(kept.get()).value().runs, 12U);
}

TEST_F(TaskReaderTest, TheTaskListIsSortedAndProbedWithoutListingWhenAskedFirst) {
  for (const char* tid : {"4250", "4242", "4301"}) tree_.mkdir(std::string("4242/task/") + tid);
  tree_.mkdir("4242/task/not-a-thread");
  const UniqueFd task(tree_.openDirectory("4242/task"));
  EXPECT_EQ(listTasks(task.get()), (std::vector<std::int32_t>{4242, 4250, 4301}));

  TaskList probed(task.get());
  EXPECT_TRUE(probed.contains(4250));
  EXPECT_FALSE(probed.contains(4251));
  EXPECT_FALSE(probed.contains(0));
  tree_.mkdir("4242/task/4251");
  EXPECT_FALSE(probed.contains(4251));  // what was probed stays the answer of this sample
  EXPECT_EQ(probed.all(), (std::vector<std::int32_t>{4242, 4250, 4251, 4301}));
  EXPECT_TRUE(probed.contains(4251));
}

TEST_F(TaskReaderTest, ChildrenOfEveryThreadSortedWithoutRepeats) {
  tree_.write("4242/task/4242/children", "5001 4999 ");
  tree_.write("4242/task/4243/children", "5001 5200");
  tree_.mkdir("4242/task/4244");  // a thread with no children file
  const UniqueFd task(tree_.openDirectory("4242/task"));
  const std::vector<std::int32_t> tids{4242, 4243, 4244};
  EXPECT_EQ(readChildren(task.get(), tids), (std::vector<Pid>{Pid{4999}, Pid{5001}, Pid{5200}}));
}

// A children file gives a page per read: a process with more children than fit in one (some
// 700) had the rest cut off, the last one's number with them.
TEST(TaskReader, EveryChildOfAProcessWithAThousandIsRead) {
  constexpr int kChildren = 1000;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::pause();
      _exit(0);
    }
    ASSERT_GT(pid, 0);
    children.push_back(pid);
  }
  const UniqueFd task(::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const std::vector<std::int32_t> tids{static_cast<std::int32_t>(::getpid())};
  const auto read = readChildren(task.get(), tids);
  for (const pid_t pid : children) ::kill(pid, SIGKILL);
  for (const pid_t pid : children) ::waitpid(pid, nullptr, 0);
  std::vector<Pid> expected;
  for (const pid_t pid : children) expected.push_back(Pid{pid});
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(read, expected);
}

TEST_F(TaskReaderTest, TheProcessHeaderAndItsErrors) {
  tree_.write("4242/stat", statLine(4242, "my (server)", 'S', 987654, 0x00200040));
  // The header is the main thread's: the process's stat sums over all threads for nothing.
  tree_.write("4242/task/4242/stat", statLine(4242, "my (server)", 'S', 987654, 0x00200040));
  tree_.write("4245/stat", statLine(4245, "whole", 'S', 1, 0));
  tree_.write("4245/task/4245/stat", statLine(4245, "main thread", 'S', 2, 0));
  auto dir = openProcessDirectory(kPid, tree_.root());
  ASSERT_TRUE(dir.ok());
  const auto header = readProcessHeader(dir->get(), kPid);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->name, "my (server)");
  EXPECT_EQ(header->start_time, 987654U);
  EXPECT_TRUE(isKernelThreadFlags(header->flags));
  EXPECT_FALSE(isKernelThreadFlags(0x400040));
  auto other = openProcessDirectory(Pid{4245}, tree_.root());
  ASSERT_TRUE(other.ok());
  const auto main_thread = readProcessHeader(other->get(), Pid{4245});
  ASSERT_TRUE(main_thread.ok());
  EXPECT_EQ(main_thread->name, "main thread");
  EXPECT_EQ(main_thread->start_time, 2U);

  const UniqueFd stat(::openat(dir->get(), "stat", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(readStatAt(stat.get())->start_time, 987654U);

  const auto gone = openProcessDirectory(Pid{4243}, tree_.root());
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_EQ(gone.error().message, "no such process: 4243");
  tree_.mkdir("4244");
  auto empty = openProcessDirectory(Pid{4244}, tree_.root());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(readProcessHeader(empty->get(), Pid{4244}).error().code, ErrorCode::kNoSuchProcess);
  EXPECT_EQ(exitedDuringRead(Pid{7}).message, "process 7 exited during the read");
}

TEST(TaskReaderOnThisProcess, AThreadBlockedInReadShowsTheCallAndItsDescriptor) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::atomic<int> tid{0};
  std::thread reader([&] {
    tid = static_cast<int>(::syscall(SYS_gettid));
    char c;
    (void)!::read(fds[0], &c, 1);
  });
  while (tid == 0) std::this_thread::yield();
  const UniqueFd task(::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const Pid self{static_cast<std::int32_t>(::getpid())};
  TaskReading r;
  for (int i = 0; i < 200; ++i) {
    r = readTask(task.get(), self, tid);
    if (r.sample.status == ObjectStatus::kBlocked) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(r.sample.status, ObjectStatus::kBlocked);
  EXPECT_EQ(r.sample.state, RunState::kSleeping);
  ASSERT_TRUE(r.syscall.has_value());
  EXPECT_EQ(r.syscall->number, SYS_read);
  EXPECT_EQ(r.syscall->args[0], static_cast<std::uint64_t>(fds[0]));
  EXPECT_TRUE(readRunCount(task.get(), tid).has_value());
  TaskList tasks(task.get());
  EXPECT_TRUE(tasks.contains(tid));
  EXPECT_TRUE(tasks.contains(self.value));

  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  reader.join();
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_TRUE(isExited(readTask(task.get(), self, tid).sample));
}

TEST(TaskReaderOnThisProcess, AWaitOnAnotherCpuIsReadOnThatCpusClock) {
  // Each CPU's scheduler clock leaves out its own interrupt and steal time, so on a virtual
  // machine two CPUs' clocks are apart by up to seconds: a thread that slept on one CPU is read
  // from each of the others, and every reading must be its nap.
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 2) GTEST_SKIP() << "one CPU";
  cpu_set_t saved;
  ASSERT_EQ(::sched_getaffinity(0, sizeof saved, &saved), 0);
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  std::thread sleeper([&] {
    cpu_set_t first;
    CPU_ZERO(&first);
    CPU_SET(0, &first);
    ::sched_setaffinity(0, sizeof first, &first);
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    while (!done) std::this_thread::sleep_for(std::chrono::seconds(1));
  });
  while (tid == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // inside its first nap
  const ThreadRef ref{Pid{::getpid()}, Tid{tid}};
  for (int cpu = 1; cpu < std::min<long>(cpus, 4); ++cpu) {
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(cpu, &only);
    ASSERT_EQ(::sched_setaffinity(0, sizeof only, &only), 0);
    const auto waited = readWaitTimes(std::span(&ref, 1)).front();
    ASSERT_TRUE(waited.has_value()) << "read on CPU " << cpu;
    EXPECT_GE(*waited, std::chrono::milliseconds(100)) << "read on CPU " << cpu;
    EXPECT_LE(*waited, std::chrono::milliseconds(700)) << "read on CPU " << cpu;
  }
  ::sched_setaffinity(0, sizeof saved, &saved);
  done = true;
  sleeper.join();
}

}  // namespace
}  // namespace wctmon::linux_platform
