// Goroutines read from a Go 1.19 runtime's memory, laid out in a fake memory as Debian's Go
// 1.19 lays them out on amd64.
#include "platform/linux/go_runtime.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "platform/linux/call_sites.h"

namespace wctmon::linux_platform {
namespace {

using namespace std::chrono_literals;

/// Memory made of regions; a read must fall inside one.
class FakeMemory final : public GoMemory {
 public:
  bool read(std::uint64_t addr, std::span<std::byte> out) override {
    ++reads;
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) return false;
    --it;
    const auto& [base, bytes] = *it;
    if (addr + out.size() > base + bytes.size()) return false;
    std::memcpy(out.data(), bytes.data() + (addr - base), out.size());
    return true;
  }
  void put(std::uint64_t addr, const void* data, std::size_t size) {
    auto& region = regions_[addr];
    region.resize(size);
    if (size != 0) std::memcpy(region.data(), data, size);
  }
  void put64(std::uint64_t addr, std::uint64_t v) { put(addr, &v, 8); }
  /// A region of `size` zero bytes, written later with poke.
  void reserve(std::uint64_t addr, std::size_t size) { regions_[addr].assign(size, std::byte{0}); }
  void poke(std::uint64_t addr, const void* data, std::size_t size) {
    auto it = std::prev(regions_.upper_bound(addr));
    std::memcpy(it->second.data() + (addr - it->first), data, size);
  }
  void poke64(std::uint64_t addr, std::uint64_t v) { poke(addr, &v, 8); }
  std::size_t reads = 0;

 private:
  std::map<std::uint64_t, std::vector<std::byte>> regions_;
};

// Go 1.19's wait reasons, as runtime.waitReasonStrings holds them.
const std::vector<std::string> kReasons{"",
                                        "GC assist marking",
                                        "IO wait",
                                        "chan receive (nil chan)",
                                        "chan send (nil chan)",
                                        "dumping heap",
                                        "garbage collection",
                                        "garbage collection scan",
                                        "panicwait",
                                        "select",
                                        "select (no cases)",
                                        "GC assist wait",
                                        "GC sweep wait",
                                        "GC scavenge wait",
                                        "chan receive",
                                        "chan send",
                                        "finalizer wait",
                                        "force gc (idle)",
                                        "semacquire",
                                        "sleep",
                                        "sync.Cond.Wait",
                                        "timer goroutine (idle)",
                                        "trace reader (blocked)",
                                        "wait for GC cycle",
                                        "GC worker (idle)",
                                        "preempted",
                                        "debug call"};
constexpr std::uint8_t kSemacquire = 18;
constexpr std::uint8_t kChanReceive = 14;
constexpr std::uint8_t kGcSweepWait = 12;

// Where things are in the fake binary (ELF addresses) and its memory.
constexpr std::uint64_t kBuildVersion = 0x520000;
constexpr std::uint64_t kWaitReasons = 0x521000;
constexpr std::uint64_t kAllgs = 0x522000;
constexpr std::uint64_t kAllglen = 0x523000;
constexpr std::uint64_t kStrings = 0x524000;
constexpr std::uint64_t kArray = 0xc000010000;
constexpr std::uint64_t kGs = 0xc000020000;
constexpr std::uint64_t kStacks = 0xc000100000;
constexpr std::uint64_t kStackSize = 0x2000;

GoBinary fakeBinary() {
  GoBinary b;
  b.go = true;
  b.allgs = kAllgs;
  b.allglen = kAllglen;
  b.wait_reason_strings = kWaitReasons;
  b.wait_reason_count = kReasons.size();
  b.build_version = kBuildVersion;
  b.module = "prog";
  const std::vector<std::string> names{
      "runtime.gopark",         "runtime.semacquire1", "sync.runtime_SemacquireMutex",
      "sync.(*Mutex).lockSlow", "sync.(*Mutex).Lock",  "main.first",
      "runtime.goexit",         "runtime.chanrecv",    "main.receiver",
      "runtime.bgsweep",        "runtime.main"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    b.functions.push_back({0x401000 + i * 0x100, 0x401000 + i * 0x100 + 0x100, names[i]});
  }
  return b;
}

/// The ELF address of function `name` of fakeBinary, plus `offset`.
std::uint64_t at(const std::string& name, std::uint64_t offset = 0x20) {
  for (const auto& f : fakeBinary().functions) {
    if (f.name == name) return f.begin + offset;
  }
  ADD_FAILURE() << name;
  return 0;
}

struct FakeG {
  std::int64_t goid = 0;
  std::uint32_t status = 4;
  std::uint8_t reason = 0;
  std::int64_t waitsince = 0;
  std::string start;
  /// Innermost first: the saved pc, then the return addresses (functions of fakeBinary).
  std::vector<std::string> frames;
};

/// A Go 1.19 process's memory holding `gs`, loaded at `bias`.
class FakeProcess {
 public:
  explicit FakeProcess(std::vector<FakeG> gs, std::string version = "go1.19.8",
                       std::uint64_t bias = 0)
      : bias_(bias) {
    std::uint64_t strings = kStrings + bias;
    memory.reserve(kWaitReasons + bias, kReasons.size() * 16);
    for (std::size_t i = 0; i < kReasons.size(); ++i) {
      memory.put(strings, kReasons[i].data(), kReasons[i].size());
      memory.poke64(kWaitReasons + bias + i * 16, strings);
      memory.poke64(kWaitReasons + bias + i * 16 + 8, kReasons[i].size());
      strings += kReasons[i].size() + 16;
    }
    memory.reserve(kBuildVersion + bias, 16);
    memory.put(strings, version.data(), version.size());
    memory.poke64(kBuildVersion + bias, strings);
    memory.poke64(kBuildVersion + bias + 8, version.size());
    memory.reserve(kAllgs + bias, 24);
    memory.poke64(kAllgs + bias, kArray);
    memory.poke64(kAllgs + bias + 8, gs.size());
    memory.poke64(kAllgs + bias + 16, gs.size() + 4);
    memory.put64(kAllglen + bias, gs.size());
    memory.reserve(kArray, gs.size() * 8);
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const auto g = kGs + i * 0x200;
      memory.poke64(kArray + i * 8, g);
      put(g, kStacks + i * kStackSize, gs[i]);
    }
  }

  FakeMemory memory;

 private:
  void put(std::uint64_t g, std::uint64_t stack, const FakeG& fake) {
    memory.reserve(g, 320);
    memory.poke64(g + 0, stack);
    memory.poke64(g + 8, stack + kStackSize);
    memory.poke(g + 144, &fake.status, 4);
    memory.poke(g + 152, &fake.goid, 8);
    memory.poke(g + 168, &fake.waitsince, 8);
    memory.poke(g + 176, &fake.reason, 1);
    if (!fake.start.empty()) memory.poke64(g + 312, at(fake.start, 0) + bias_);
    if (fake.frames.empty()) return;
    // Frames from the top of the stack down: each holds its caller's bp and return address.
    memory.reserve(stack, kStackSize);
    std::uint64_t bp = stack + kStackSize - 0x100;
    memory.poke64(g + 56 + 8, at(fake.frames[0]) + bias_);
    memory.poke64(g + 56 + 48, bp);
    for (std::size_t i = 1; i < fake.frames.size(); ++i) {
      const bool last = i + 1 == fake.frames.size();
      memory.poke64(bp, last ? 0 : bp + 0x20);
      memory.poke64(bp + 8, at(fake.frames[i]) + bias_);
      bp += 0x20;
    }
  }
  std::uint64_t bias_;
};

const std::vector<std::string> kMutexFrames{
    "runtime.gopark",         "runtime.semacquire1", "sync.runtime_SemacquireMutex",
    "sync.(*Mutex).lockSlow", "sync.(*Mutex).Lock",  "main.first",
    "runtime.goexit"};

std::vector<std::string> functionsOf(const Goroutine& g) {
  std::vector<std::string> out;
  for (const auto& f : g.frames) out.push_back(f.function);
  return out;
}

TEST(GoRuntime, ReadsTheProgramsWaitingGoroutinesWithReasonsAndFrames) {
  FakeProcess p({
      {1, 4, 19, 0, "runtime.main", {"runtime.gopark"}},                // sleep
      {2, 4, kGcSweepWait, 0, "runtime.bgsweep", {"runtime.gopark"}},   // its own
      {18, 4, kSemacquire, 5'000'000'000, "main.first", kMutexFrames},  // ABBA
      {19,
       4,
       kChanReceive,
       0,
       "main.receiver",
       {"runtime.gopark", "runtime.chanrecv",  //
        "main.receiver", "runtime.goexit"}},
      {7, 6, 0, 0, "", {}},             // dead
      {20, 2, 0, 0, "main.first", {}},  // running
  });
  const auto go = readGoProgram(fakeBinary(), 0, p.memory, 65s);
  ASSERT_TRUE(go.visible) << go.note;
  EXPECT_EQ(go.version, "go1.19.8");
  EXPECT_EQ(go.goroutines, 5U);
  ASSERT_EQ(go.blocked.size(), 3U);
  EXPECT_EQ(go.blocked[0].id, 1U);
  EXPECT_EQ(go.blocked[0].waits_on, "sleep");
  EXPECT_FALSE(go.blocked[0].lock_wait);

  const auto& mutex = go.blocked[1];
  EXPECT_EQ(mutex.id, 18U);
  EXPECT_EQ(mutex.status, "waiting");
  EXPECT_EQ(mutex.wait_reason, "semacquire");
  EXPECT_EQ(mutex.waits_on, "sync.Mutex.Lock");
  EXPECT_TRUE(mutex.lock_wait);
  EXPECT_EQ(mutex.waited, std::optional(60000ms));
  EXPECT_EQ(functionsOf(mutex), kMutexFrames);
  EXPECT_EQ(mutex.frames[0].offset, 0x20U);
  EXPECT_EQ(mutex.frames[0].module, "prog");

  const auto& chan = go.blocked[2];
  EXPECT_EQ(chan.waits_on, "chan receive");
  EXPECT_FALSE(chan.lock_wait);
  EXPECT_FALSE(chan.waited);
  EXPECT_EQ(functionsOf(chan), (std::vector<std::string>{"runtime.gopark", "runtime.chanrecv",
                                                         "main.receiver", "runtime.goexit"}));
}

TEST(GoRuntime, AProgramLoadedElsewhereIsReadAtItsBias) {
  constexpr std::uint64_t kBias = 0x555500000000;
  FakeProcess p({{18, 4, kSemacquire, 0, "main.first", kMutexFrames}}, "go1.19", kBias);
  const auto go = readGoProgram(fakeBinary(), kBias, p.memory, 1s);
  ASSERT_TRUE(go.visible) << go.note;
  ASSERT_EQ(go.blocked.size(), 1U);
  EXPECT_EQ(functionsOf(go.blocked[0]), kMutexFrames);
  EXPECT_EQ(go.blocked[0].frames[0].pc, at("runtime.gopark") + kBias);
}

TEST(GoRuntime, AVersionWhoseLayoutWasNotVerifiedIsNotVisibleNotGuessed) {
  FakeProcess p({{18, 4, kSemacquire, 0, "main.first", kMutexFrames}}, "go1.22.1");
  const auto go = readGoProgram(fakeBinary(), 0, p.memory, 1s);
  EXPECT_FALSE(go.visible);
  EXPECT_EQ(go.version, "go1.22.1");
  EXPECT_TRUE(go.blocked.empty());
  EXPECT_NE(go.note.find("not known"), std::string::npos) << go.note;
  EXPECT_FALSE(goLayoutOf("go1.20.3"));
  EXPECT_FALSE(goLayoutOf("go1.190"));
  EXPECT_TRUE(goLayoutOf("go1.19.13"));
}

TEST(GoRuntime, AGoroutineListThatDoesNotReadAsTheLayoutSaysIsNotVisible) {
  for (const auto& gs : std::vector<std::vector<FakeG>>{
           {{18, 4, kSemacquire, 0, "main.first", {}}, {18, 4, kSemacquire, 0, "main.first", {}}},
           {{18, 77, 0, 0, "main.first", {}}},
           {{-3, 4, 0, 0, "main.first", {}}},
           {{18, 4, 200, 0, "main.first", {}}},
       }) {
    FakeProcess p(gs);
    const auto go = readGoProgram(fakeBinary(), 0, p.memory, 1s);
    EXPECT_FALSE(go.visible);
    EXPECT_EQ(go.version, "go1.19.8");
    EXPECT_NE(go.note.find("did not read as Go go1.19.8 lays it out"), std::string::npos)
        << go.note;
  }
  // No memory at all: not even the version.
  FakeMemory empty;
  const auto go = readGoProgram(fakeBinary(), 0, empty, 1s);
  EXPECT_FALSE(go.visible);
  EXPECT_TRUE(go.version.empty());
}

TEST(GoRuntime, EveryLoopIsBounded) {
  std::vector<FakeG> gs;
  for (int i = 1; i <= 50; ++i) gs.push_back({i, 4, kSemacquire, 0, "main.first", kMutexFrames});
  FakeProcess p(gs);
  GoReadLimits limits;
  limits.max_goroutines = 40;
  limits.max_listed = 10;
  limits.max_frames = 3;
  const auto go = readGoProgram(fakeBinary(), 0, p.memory, 1s, limits);
  ASSERT_TRUE(go.visible);
  EXPECT_EQ(go.goroutines, 40U);
  ASSERT_EQ(go.blocked.size(), 10U);
  EXPECT_EQ(go.blocked[0].frames.size(), 3U);
  EXPECT_NE(go.note.find("only the first 40 of 50 goroutines"), std::string::npos) << go.note;
  EXPECT_NE(go.note.find("30 more waiting goroutines are not listed"), std::string::npos)
      << go.note;
}

TEST(GoRuntime, AFramePointerThatLoopsOrLeavesTheStackEndsTheWalk) {
  FakeProcess p({{18, 4, kSemacquire, 0, "main.first", kMutexFrames}});
  // The first saved bp points at itself.
  const auto bp = kStacks + kStackSize - 0x100;
  p.memory.poke64(bp, bp);
  auto go = readGoProgram(fakeBinary(), 0, p.memory, 1s);
  ASSERT_EQ(go.blocked.size(), 1U);
  EXPECT_EQ(go.blocked[0].frames.size(), 2U);
  // The saved bp is outside the goroutine's stack.
  p.memory.poke64(kGs + 56 + 48, 0x1000);
  go = readGoProgram(fakeBinary(), 0, p.memory, 1s);
  ASSERT_EQ(go.blocked.size(), 1U);
  EXPECT_EQ(functionsOf(go.blocked[0]), std::vector<std::string>{"runtime.gopark"});
  // Semacquire without frames still counts as a lock wait (a semaphore records no owner).
  EXPECT_EQ(go.blocked[0].waits_on, "semacquire");
  EXPECT_TRUE(go.blocked[0].lock_wait);
}

std::vector<StackFrame> frames(std::vector<std::string> names) {
  std::vector<StackFrame> out;
  for (auto& n : names) out.push_back(StackFrame{0, std::move(n), "", 0});
  return out;
}

TEST(GoRuntime, WaitsAreNamedByTheSyncCallTheProgramMade) {
  const auto rw = goWaitOf("semacquire", frames({"runtime.gopark", "sync.runtime_SemacquireMutex",
                                                 "sync.(*Mutex).lockSlow", "sync.(*Mutex).Lock",
                                                 "sync.(*RWMutex).Lock", "main.f"}));
  EXPECT_EQ(rw.waits_on, "sync.RWMutex.Lock");
  EXPECT_TRUE(rw.lock);
  const auto read =
      goWaitOf("semacquire",
               frames({"runtime.gopark", "sync.(*RWMutex).RLock", "main.f", "sync.(*Mutex).Lock"}));
  EXPECT_EQ(read.waits_on, "sync.RWMutex.RLock");
  const auto wg = goWaitOf("semacquire", frames({"runtime.gopark", "sync.(*WaitGroup).Wait"}));
  EXPECT_EQ(wg.waits_on, "sync.WaitGroup.Wait");
  EXPECT_FALSE(wg.lock);
  EXPECT_TRUE(goWaitOf("sync.Mutex.Lock", {}).lock);  // Go 1.20's own name
  EXPECT_FALSE(goWaitOf("chan receive", {}).lock);
  EXPECT_FALSE(goWaitOf("IO wait", {}).lock);
  EXPECT_FALSE(goWaitOf("sync.Cond.Wait", {}).lock);
}

TEST(GoRuntime, AFileThatIsNoGoBinaryHasNoRuntime) {
  const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const auto binary = loadGoBinary(fd);
  ::close(fd);
  EXPECT_FALSE(binary.go);
  EXPECT_FALSE(binary.hasRuntime());
  // Its symbols are not kept: they would name nothing.
  EXPECT_TRUE(binary.functions.empty());
  const auto go = readGoProgram(binary, 0, *std::make_unique<FakeMemory>(), 1s);
  EXPECT_FALSE(go.visible);
}

TEST(GoRuntime, TheVersionIsReadFromTheBuildInformationOfAStrippedBinary) {
  // The start of .go.buildinfo of a stripped Go 1.19 binary.
  std::string section("\xff Go buildinf:\x08\x02", 16);
  section.append(16, '\0');
  section +=
      "\x08go1.19.8\xfc\x01"
      "0w";
  const auto bytes = std::as_bytes(std::span(section.data(), section.size()));
  EXPECT_EQ(goBuildInfoVersion(bytes), "go1.19.8");
  // Before Go 1.18 the version is behind a pointer: not read.
  section[15] = '\0';
  EXPECT_EQ(goBuildInfoVersion(std::as_bytes(std::span(section.data(), section.size()))), "");
  EXPECT_EQ(goBuildInfoVersion(bytes.first(20)), "");
  // A length past the section.
  std::string cut = section.substr(0, 33);
  cut[15] = '\x02';
  cut[32] = '\x40';
  EXPECT_EQ(goBuildInfoVersion(std::as_bytes(std::span(cut.data(), cut.size()))), "");

  GoBinary stripped;
  stripped.go = true;
  stripped.build_info_version = "go1.19.8";
  FakeMemory memory;
  const auto go = readGoProgram(stripped, 0, memory, 1s);
  EXPECT_FALSE(go.visible);
  EXPECT_EQ(go.version, "go1.19.8");
  EXPECT_NE(go.note.find("stripped"), std::string::npos) << go.note;
}

TEST(GoRuntime, OnlyThreadsIdleInTheGoSchedulerMakeAProcessAGoProgram) {
  ThreadSample idle;
  EXPECT_FALSE(isGoRuntimeThread(idle));
  idle.wait = WaitObject{};
  idle.wait->name = std::string(kGoSchedulerKind);
  EXPECT_TRUE(isGoRuntimeThread(idle));
  idle.wait->name = "pthread_cond_wait 0x10";
  EXPECT_FALSE(isGoRuntimeThread(idle));
}

}  // namespace
}  // namespace wctmon::linux_platform
