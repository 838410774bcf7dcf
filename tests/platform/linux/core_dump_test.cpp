// ELF cores of real deadlocked processes, opened in gdb and lldb as an operator would.
#include "platform/linux/core_dump.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon::linux_platform {
namespace {

using testing::FixtureProcess;

/// What `argv` prints, stdout then stderr.
std::string output(const std::vector<std::string>& argv) {
  const auto r = testing::runCommand(argv);
  return r.out + r.err;
}

/// gdb's backtrace of each thread of `core`, by LWP.
std::map<int, std::string> backtraces(const std::filesystem::path& core) {
  const auto text = output({"gdb", "-nx", "-batch", "-ex", "thread apply all bt",
                            testing::fixturePath(), core.string()});
  std::map<int, std::string> out;
  const std::regex header(R"(\nThread \d+ \([^\n]*?LWP (\d+)\))");
  auto it = std::sregex_iterator(text.begin(), text.end(), header);
  for (; it != std::sregex_iterator(); ++it) {
    const auto next = std::next(it);
    const auto end =
        next == std::sregex_iterator() ? text.size() : static_cast<std::size_t>(next->position());
    const auto begin = static_cast<std::size_t>(it->position());
    out[std::stoi((*it)[1])] = text.substr(begin, end - begin);
  }
  if (out.empty()) ADD_FAILURE() << "gdb read no thread from the core:\n" << text;
  return out;
}

TEST(CoreDump, ADeadlockedProcessGivesACoreGdbAndLldbOpenWithTheCyclesFramesNamed) {
  FixtureProcess fx("heartbeat");
  const int a = fx.tid("a"), b = fx.tid("b");
  const long before = std::stol(fx.ask("beat"));
  testing::TempDir dir("core-dump");
  const auto path = dir.path() / "fixture.core";
  const auto dump =
      writeCoreDump(Pid{fx.pid()}, path, CoreDumpOptions{.diagnosis = "{\"incident\": \"abba\"}"});
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  EXPECT_EQ(dump->bytes, std::filesystem::file_size(path));
  EXPECT_FALSE(dump->cut);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U) << "only the service's account reads a dump";

  // Each deadlocked thread was held for its registers alone, one at a time.
  ASSERT_GE(dump->threads.size(), 4U);
  EXPECT_EQ(dump->threads.front().thread.tid.value, fx.pid()) << "the main thread first";
  for (const auto& t : dump->threads) {
    if (t.thread.tid.value != a && t.thread.tid.value != b) continue;
    EXPECT_TRUE(t.stopped) << t.not_stopped_because;
    EXPECT_LT(t.held, std::chrono::milliseconds(50));
  }

  const auto bt = backtraces(path);
  for (const int tid : {a, b}) {
    ASSERT_TRUE(bt.contains(tid)) << "no thread " << tid << " in the core";
    const auto& frames = bt.at(tid);
    EXPECT_TRUE(frames.find("pthread_mutex_lock") != std::string::npos ||
                frames.find("lll_lock_wait") != std::string::npos)
        << frames;
    EXPECT_NE(frames.find("abba"), std::string::npos) << frames;
  }
  EXPECT_NE(testing::readFile(path).find("{\"incident\": \"abba\"}"), std::string::npos)
      << "the diagnosis is in the core";

  // lldb too (Debian's prints Python errors of its own packaging on stderr; they are ignored).
  const auto lldb = output({"lldb", "--batch", "-c", path.string(), testing::fixturePath(), "-o",
                            "thread backtrace all"});
  std::size_t locking = 0;
  for (std::size_t at = 0; (at = lldb.find("pthread_mutex_lock(mutex=", at)) != std::string::npos;
       ++at) {
    ++locking;
  }
  EXPECT_GE(locking, 2U) << "both threads of the cycle, in pthread_mutex_lock:\n" << lldb;
  EXPECT_NE(lldb.find("abba"), std::string::npos) << lldb;

  // Nothing was left stopped: the heartbeat goes on.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_GT(std::stol(fx.ask("beat")), before);
}

/// A fixture that deadlocks, the threads of its cycle, and the functions (any one) that name
/// their wait in a debugger's backtrace.
struct DeadlockKind {
  std::string scenario;
  std::string arg;
  std::vector<std::string> cycle;
  std::vector<std::string> waits_in;
  /// The fixture's own function the cycle's threads came from.
  std::string from;
};

/// Named in test listings by what it runs (the same in every build).
void PrintTo(const DeadlockKind& kind, std::ostream* out) {
  *out << kind.scenario << (kind.arg.empty() ? "" : " " + kind.arg);
}

class CoreDumpOfEachKind : public ::testing::TestWithParam<DeadlockKind> {};

TEST_P(CoreDumpOfEachKind, GdbAndLldbOpenItWithTheCyclesFramesNamed) {
  const auto& kind = GetParam();
  FixtureProcess fx(kind.scenario, kind.arg);
  testing::TempDir dir("core-dump");
  const auto path = dir.path() / "kind.core";
  const auto dump = writeCoreDump(Pid{fx.pid()}, path, CoreDumpOptions{});
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  const auto names_a_wait = [&](const std::string& frames) {
    return std::any_of(kind.waits_in.begin(), kind.waits_in.end(),
                       [&](const std::string& f) { return frames.find(f) != std::string::npos; });
  };
  const auto bt = backtraces(path);
  for (const auto& name : kind.cycle) {
    const int tid = fx.tid(name);
    ASSERT_TRUE(bt.contains(tid)) << name << " (" << tid << ") is not in the core";
    EXPECT_TRUE(names_a_wait(bt.at(tid))) << name << ":\n" << bt.at(tid);
    EXPECT_NE(bt.at(tid).find(kind.from), std::string::npos) << name << ":\n" << bt.at(tid);
  }
  // lldb names no thread ids in a backtrace: every thread is there, and the same frames.
  const auto lldb = output({"lldb", "--batch", "-c", path.string(), testing::fixturePath(), "-o",
                            "thread backtrace all"});
  std::size_t threads = 0;
  for (std::size_t at = 0; (at = lldb.find("thread #", at)) != std::string::npos; ++at) ++threads;
  EXPECT_EQ(threads, bt.size()) << lldb;
  EXPECT_TRUE(names_a_wait(lldb)) << lldb;
  EXPECT_NE(lldb.find(kind.from), std::string::npos) << lldb;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CoreDumpOfEachKind,
    ::testing::Values(
        DeadlockKind{"mutex-abba", "", {"a", "b"}, {"pthread_mutex_lock"}, "mutexAbba"},
        DeadlockKind{"mutex-abba",
                     "pi",
                     {"a", "b"},
                     {"pthread_mutex_lock", "__pthread_mutex_lock_full"},
                     "mutexAbba"},
        DeadlockKind{"rwlock-abba", "", {"a", "b"}, {"pthread_rwlock_wrlock"}, "rwlockAbba"},
        DeadlockKind{
            "join-cycle", "", {"main", "a"}, {"clockjoin", "pthread_mutex_lock"}, "joinCycle"},
        DeadlockKind{"sem-abba", "", {"a", "b"}, {"sem_wait"}, "semAbba"}),
    [](const ::testing::TestParamInfo<DeadlockKind>& param_info) {
      auto name = param_info.param.scenario +
                  (param_info.param.arg.empty() ? "" : "_" + param_info.param.arg);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(CoreDump, ACoreCutAtItsCapStillOpensAndSaysItWasCut) {
  FixtureProcess fx("heartbeat");
  testing::TempDir dir("core-dump");
  const auto path = dir.path() / "cut.core";
  const auto dump = writeCoreDump(Pid{fx.pid()}, path, CoreDumpOptions{.max_bytes = 1 << 20});
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  EXPECT_TRUE(dump->cut);
  EXPECT_LE(std::filesystem::file_size(path), std::uint64_t{1} << 20);
  const auto text = output(
      {"gdb", "-nx", "-batch", "-ex", "info threads", testing::fixturePath(), path.string()});
  EXPECT_NE(text.find("LWP " + std::to_string(fx.tid("a"))), std::string::npos) << text;
}

TEST(CoreDump, MemoryMarkedNotToBeDumpedOrNeverTouchedIsLeftOut) {
  // As an ASan-built server's: 64 GiB reserved and never touched, and 64 MiB touched but marked
  // MADV_DONTDUMP (ASan's shadow is both). The kernel's core leaves both out; so does ours.
  const std::string program = R"(
import json, mmap, sys
reserved = mmap.mmap(-1, 64 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000)
marked = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
marked.write(b"\x01" * (64 << 20))
marked.madvise(mmap.MADV_DONTDUMP)
print(json.dumps({"pid": __import__("os").getpid()}), flush=True)
sys.stdin.read()
)";
  FixtureProcess fx({"python3", "-c", program}, std::chrono::seconds(20));
  testing::TempDir dir("core-dump");
  const auto path = dir.path() / "python.core";
  const auto dump = writeCoreDump(Pid{fx.pid()}, path, {});
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  EXPECT_LT(dump->bytes, std::uint64_t{48} << 20)
      << "neither the reservation nor the marked memory";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_LE(static_cast<std::uint64_t>(st.st_blocks) * 512, dump->bytes + (1 << 20));
}

TEST(CoreDump, AProcessThatIsNotThereIsAClearErrorAndLeavesNoFile) {
  testing::TempDir dir("core-dump");
  const auto path = dir.path() / "none.core";
  const auto dump = writeCoreDump(Pid{999999999}, path, {});
  ASSERT_FALSE(dump.ok());
  EXPECT_EQ(dump.error().code, ErrorCode::kNoSuchProcess);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(CoreDump, AnExistingFileIsNeverOverwritten) {
  FixtureProcess fx("heartbeat");
  testing::TempDir dir("core-dump");
  const auto path = dir.path() / "taken.core";
  std::ofstream(path) << "someone else's";
  const auto dump = writeCoreDump(Pid{fx.pid()}, path, {});
  ASSERT_FALSE(dump.ok());
  EXPECT_EQ(dump.error().code, ErrorCode::kIo);
  EXPECT_EQ(testing::readFile(path), "someone else's");
}

}  // namespace
}  // namespace wctmon::linux_platform
