#include "platform/linux/python_state.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace wctmon::linux_platform {
namespace {

std::vector<std::byte> fromHex(const std::string& hex) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(PythonLineTable, GivesEachInstructionTheLineCPythonGivesIt) {
  // The code object of this function, compiled by Debian's python3.11 ("t.py"):
  //   1 def f(x):
  //   2     y = x + 1
  //   3
  //   4     if y > 2:
  //   5         z = [i
  //   6              for i in range(y)]
  //   7         return z
  //   8     return None
  // and the line co_lines() gives each of its 41 code units.
  const auto table = fromHex(
      "8000d80809884189058041e00708883182758075f002010d20f000010d20dd161b984191689468f003010d20f1"
      "00010d20f400010d208801e00f108808d80b0f8834");
  const std::vector<int> expected = {1, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6, 6,
                                     6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 8, 8};
  for (std::size_t unit = 0; unit < expected.size(); ++unit) {
    EXPECT_EQ(pythonLineOf(table, 1, unit), expected[unit]) << "code unit " << unit;
  }
  EXPECT_EQ(pythonLineOf(table, 1, expected.size()), std::nullopt) << "past the table";
}

TEST(PythonLineTable, FollowsALongJumpAndRejectsWhatIsNoTable) {
  // def g(): a = 1 on line 2, then 300 blank lines, then "return a" on line 303.
  const auto table = fromHex("8000d808098041f05a09000c0d8048");
  EXPECT_EQ(pythonLineOf(table, 1, 0), 1);
  EXPECT_EQ(pythonLineOf(table, 1, 1), 2);
  EXPECT_EQ(pythonLineOf(table, 1, 3), 303);
  EXPECT_EQ(pythonLineOf(table, 1, 4), 303);
  // An entry that gives no location (kind 15) gives no line.
  const std::vector<std::byte> no_location = {std::byte{0xf8}};
  EXPECT_EQ(pythonLineOf(no_location, 10, 0), std::nullopt);
  // Bytes that do not start an entry are no 3.11 table.
  const std::vector<std::byte> garbage = {std::byte{0x01}, std::byte{0x02}};
  EXPECT_EQ(pythonLineOf(garbage, 1, 0), std::nullopt);
  EXPECT_EQ(pythonLineOf({}, 1, 0), std::nullopt);
  // A varint that never ends stops at the end of the table.
  const std::vector<std::byte> endless = {std::byte{0xe8}, std::byte{0x7f}, std::byte{0x7f}};
  EXPECT_NO_FATAL_FAILURE((void)pythonLineOf(endless, 1, 0));
}

/// A process's memory as a few regions; a read must fall inside one.
class FakeMemory {
 public:
  template <typename T>
  void put(std::uint64_t addr, const T& value) {
    bytes(addr, &value, sizeof(value));
  }
  void bytes(std::uint64_t addr, const void* data, std::size_t size) {
    auto& region = regionFor(addr, size);
    std::memcpy(region.second.data() + (addr - region.first), data, size);
  }
  /// A compact str object at `addr`: ASCII, or of `kind` 1, 2 or 4 with `units` code units.
  void ascii(std::uint64_t addr, const std::string& text) {
    put<std::uint64_t>(addr + 16, text.size());
    put<std::uint32_t>(addr + 32, (1U << 2) | (1U << 5) | (1U << 6) | (1U << 7));
    bytes(addr + 48, text.data(), text.size());
  }
  void wide(std::uint64_t addr, const std::vector<std::uint16_t>& units) {
    put<std::uint64_t>(addr + 16, units.size());
    put<std::uint32_t>(addr + 32, (2U << 2) | (1U << 5) | (1U << 7));
    put<std::uint64_t>(addr + 56, 0);  // no UTF-8 copy yet
    bytes(addr + 72, units.data(), units.size() * 2);
  }

  MemoryReader reader() {
    return [this](std::uint64_t addr, std::span<std::byte> out) {
      ++reads;
      for (const auto& [begin, data] : regions_) {
        if (addr >= begin && addr + out.size() <= begin + data.size()) {
          std::memcpy(out.data(), data.data() + (addr - begin), out.size());
          return true;
        }
      }
      return false;
    };
  }
  int reads = 0;

 private:
  static constexpr std::uint64_t kRegion = 0x10000;
  std::pair<const std::uint64_t, std::vector<std::byte>>& regionFor(std::uint64_t addr,
                                                                    std::size_t size) {
    const auto begin = addr & ~(kRegion - 1);
    EXPECT_LE(addr + size, begin + kRegion);
    auto [it, fresh] = regions_.try_emplace(begin, std::vector<std::byte>(kRegion));
    return *it;
  }
  std::map<std::uint64_t, std::vector<std::byte>> regions_;
};

constexpr std::uint64_t kVersion = 0x500000;
constexpr std::uint64_t kRuntime = 0x510000;
constexpr std::uint64_t kInterp = 0x7f0000010000;
constexpr std::uint64_t kThread1 = 0x7f0000020000;
constexpr std::uint64_t kThread2 = 0x7f0000020400;
constexpr std::uint64_t kPthread1 = 0x7f0000030000;
constexpr std::uint64_t kPthread2 = 0x7f0000040000;
constexpr std::uint64_t kCframe = 0x7f0000050000;
constexpr std::uint64_t kFrames = 0x7f0000060000;
constexpr std::uint64_t kCodes = 0x7f0000070000;
constexpr std::uint64_t kCodeType = 0x7f0000080000;
constexpr std::uint64_t kStrings = 0x7f0000090000;

/// An interpreter as 3.11 lays it out: thread 101 in `worker` (a.py:3) called from `<module>`
/// (a.py:1); thread 102's state names a thread the process does not have.
class FakeInterpreter : public ::testing::Test {
 protected:
  void SetUp() override {
    m.put<std::uint64_t>(kVersion, 0x030b02f0);
    m.put<std::uint64_t>(kRuntime + 40, kInterp);
    m.put<std::uint64_t>(kRuntime + 48, kInterp);
    m.put<std::uint64_t>(kInterp + 0, 0);
    m.put<std::uint64_t>(kInterp + 16, kThread1);
    thread(kThread1, kThread2, kPthread1, 101, kCframe);
    thread(kThread2, 0, kPthread2, 102, 0);
    m.put<std::uint64_t>(kCframe + 8, kFrames);
    // "code" objects: <module> at line 1 of a.py, worker defined at line 2.
    m.put<std::uint64_t>(kCodeType + 24, kStrings + 0x800);
    m.bytes(kStrings + 0x800, "code", 5);
    m.ascii(kStrings, "a.py");
    m.ascii(kStrings + 0x100, "<module>");
    m.ascii(kStrings + 0x200, "worker");
    code(kCodes, 1, kStrings + 0x100, "80000000");  // one entry: 1 unit on line 1
    // Unit 0 on line 2, units 1-8 on line 3 (a one-line entry that adds 1, with its columns).
    code(kCodes + 0x400, 2, kStrings + 0x200, "8000df0102");
    frame(kFrames, kCodes + 0x400, kFrames + 0x100, 3);
    frame(kFrames + 0x100, kCodes, 0, 0);
  }
  void thread(std::uint64_t at, std::uint64_t next, std::uint64_t pthread, std::uint64_t tid,
              std::uint64_t cframe) {
    m.put<std::uint64_t>(at + 8, next);
    m.put<std::uint64_t>(at + 16, kInterp);
    m.put<std::uint64_t>(at + 56, cframe);
    m.put<std::uint64_t>(at + 152, pthread);
    m.put<std::uint64_t>(at + 160, tid);
    m.put<std::uint64_t>(pthread, pthread);  // the TCB points to itself
  }
  void code(std::uint64_t at, std::int32_t first_line, std::uint64_t name,
            const std::string& linetable) {
    m.put<std::uint64_t>(at + 8, kCodeType);
    m.put<std::uint64_t>(at + 16, 16);  // code units
    m.put<std::int32_t>(at + 72, first_line);
    m.put<std::uint64_t>(at + 112, kStrings);
    m.put<std::uint64_t>(at + 120, name);
    m.put<std::uint64_t>(at + 128, name);
    const auto table = fromHex(linetable);
    const auto bytes = at + 0x300;
    m.put<std::uint64_t>(at + 136, bytes);
    m.put<std::uint64_t>(bytes + 16, table.size());
    m.bytes(bytes + 32, table.data(), table.size());
  }
  void frame(std::uint64_t at, std::uint64_t code, std::uint64_t previous, std::uint64_t unit) {
    m.put<std::uint64_t>(at + 32, code);
    m.put<std::uint64_t>(at + 48, previous);
    m.put<std::uint64_t>(at + 56, code + 184 + 2 * unit);
    m.put<std::uint8_t>(at + 69, 0);
  }
  PythonState read() {
    return readPythonState({kRuntime, kVersion}, m.reader(),
                           [](std::int32_t tid) { return tid == 100 || tid == 101; });
  }
  FakeMemory m;
};

TEST_F(FakeInterpreter, ReadsEachThreadsFramesInnermostFirst) {
  const auto state = read();
  ASSERT_TRUE(state.readable()) << state.error;
  EXPECT_EQ(state.version, 0x030b02f0U);
  ASSERT_EQ(state.threads.size(), 1U) << "thread 102 is not one of the process";
  const auto* t = state.byNativeId(101);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(state.byThreadId(kPthread1), t);
  EXPECT_EQ(state.byThreadId(kPthread2), nullptr);
  ASSERT_EQ(t->frames.size(), 2U);
  EXPECT_EQ(t->frames[0].function, "worker");
  EXPECT_EQ(t->frames[0].file, "a.py");
  EXPECT_EQ(t->frames[0].line, 3U);
  EXPECT_EQ(t->frames[1].function, "<module>");
  EXPECT_EQ(t->frames[1].line, 1U);
  EXPECT_FALSE(t->truncated);
}

TEST_F(FakeInterpreter, NamesWrittenInUcs2AreGivenInUtf8) {
  m.wide(kStrings + 0x200, {0x00e9, 0x4e2d});  // "é中"
  const auto state = read();
  ASSERT_TRUE(state.readable()) << state.error;
  EXPECT_EQ(state.threads[0].frames[0].function, "\xC3\xA9\xE4\xB8\xAD");
}

TEST_F(FakeInterpreter, AnotherVersionIsNotReadAtAll) {
  m.put<std::uint64_t>(kVersion, 0x030c00f0);
  const int before = m.reads;
  const auto state = read();
  EXPECT_FALSE(state.readable());
  EXPECT_EQ(state.error,
            "Python frames not readable for this interpreter: version 3.12, only 3.11's layout "
            "is known");
  EXPECT_TRUE(state.threads.empty());
  EXPECT_EQ(m.reads - before, 1) << "only the version was read";
  EXPECT_FALSE(
      readPythonState({kRuntime, 0}, m.reader(), [](std::int32_t) { return true; }).readable());
}

TEST_F(FakeInterpreter, ALayoutThatDoesNotValidateIsSaidNotReadable) {
  // A thread state that does not point back to its interpreter: not 3.11's layout.
  m.put<std::uint64_t>(kThread2 + 16, kInterp + 8);
  auto state = read();
  EXPECT_FALSE(state.readable());
  EXPECT_NE(state.error.find("Python frames not readable for this interpreter"), std::string::npos);
  // No thread of the process among the thread states.
  m.put<std::uint64_t>(kThread2 + 16, kInterp);
  m.put<std::uint64_t>(kPthread1, 0);  // not a TCB
  state = read();
  EXPECT_EQ(state.error,
            "Python frames not readable for this interpreter: no thread state names a thread of "
            "the process");
}

TEST_F(FakeInterpreter, AFrameCycleAndABadCodeObjectEndTheWalk) {
  frame(kFrames + 0x100, kCodes, kFrames, 0);  // <module>'s caller is worker again
  auto state = read();
  ASSERT_TRUE(state.readable()) << state.error;
  EXPECT_EQ(state.threads[0].frames.size(), 128U);
  EXPECT_TRUE(state.threads[0].truncated);
  m.put<std::uint64_t>(kCodes + 8, kStrings);  // a type that is not "code"
  frame(kFrames + 0x100, kCodes, 0, 0);
  state = read();
  ASSERT_TRUE(state.readable()) << state.error;
  ASSERT_EQ(state.threads[0].frames.size(), 1U);
  EXPECT_TRUE(state.threads[0].truncated);
}

TEST(PythonLibraryWait, NamesWaitsOfTheStandardLibraryAndNotUserCode) {
  const auto frame = [](std::string file, std::string function) {
    StackFrame f;
    f.file = std::move(file);
    f.function = std::move(function);
    return f;
  };
  EXPECT_EQ(pythonLibraryWait(frame("/usr/lib/python3.11/threading.py", "Condition.wait")),
            "Python threading.Condition.wait");
  EXPECT_EQ(
      pythonLibraryWait(frame("/usr/lib/python3.11/threading.py", "Thread._wait_for_tstate_lock")),
      "Python threading.Thread.join");
  EXPECT_EQ(pythonLibraryWait(frame("/usr/lib/python3.11/queue.py", "Queue.get")),
            "Python queue.Queue.get");
  EXPECT_EQ(pythonLibraryWait(frame("/usr/lib/python3.11/concurrent/futures/thread.py", "_worker")),
            "Python concurrent.futures worker (idle)");
  EXPECT_EQ(pythonLibraryWait(frame("/srv/app/worker.py", "transfer")), std::nullopt);
  EXPECT_EQ(pythonLibraryWait(frame("<string>", "first")), std::nullopt);
}

}  // namespace
}  // namespace wctmon::linux_platform
