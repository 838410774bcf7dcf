#include "platform/linux/module_sites_store.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "os/unique_fd.h"
#include "support/temp_dir.h"

namespace wctmon::linux_platform {
namespace {

ModuleIdentity someModule() {
  ModuleIdentity id;
  id.device = 2049;
  id.inode = 1234567;
  id.size = 1926232;
  id.mtime_ns = 1'700'000'000'123'456'789;
  id.ctime_ns = 1'700'000'001'000'000'000;
  id.build_id = std::string("\x01\x02\x00\xfe", 4);
  return id;
}

ModuleSites someSites() {
  ModuleSites sites;
  for (const auto* function : {"pthread_mutex_lock", "absl::Mutex::Lock()", "Parker::park(bool)"}) {
    ModuleSites::Range range;
    range.begin = 0x1000 * (sites.ranges.size() + 1);
    range.end = range.begin + 0x80;
    range.site = callSiteOfFunction(function).value();
    range.function = function;
    sites.ranges.push_back(range);
  }
  sites.segments = {{0, 0, 0x2000}, {0x3000, 0x4000, 0x800}};
  sites.anchors = {{kAnchorSymbols[1], 0x9000}, {kAnchorSymbols[0], 0x8000}};
  return sites;
}

void expectSame(const ModuleSites& a, const ModuleSites& b) {
  ASSERT_EQ(a.ranges.size(), b.ranges.size());
  for (std::size_t i = 0; i < a.ranges.size(); ++i) {
    const auto& x = a.ranges[i];
    const auto& y = b.ranges[i];
    EXPECT_EQ(x.begin, y.begin);
    EXPECT_EQ(x.end, y.end);
    EXPECT_EQ(x.function, y.function);
    EXPECT_EQ(x.site.role, y.site.role);
    EXPECT_EQ(x.site.kind, y.site.kind);
    EXPECT_EQ(x.site.generic, y.site.generic);
    EXPECT_EQ(x.site.refines, y.site.refines);
    EXPECT_EQ(x.site.detail, y.site.detail);
  }
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    EXPECT_EQ(a.segments[i].offset, b.segments[i].offset);
    EXPECT_EQ(a.segments[i].vaddr, b.segments[i].vaddr);
    EXPECT_EQ(a.segments[i].size, b.segments[i].size);
  }
  EXPECT_EQ(a.anchors, b.anchors);
}

/// The directory of this build's entries in store directory `store`: its only directory.
std::filesystem::path buildDir(const std::filesystem::path& store) {
  std::filesystem::path found;
  for (const auto& e : std::filesystem::directory_iterator(store)) {
    if (!e.is_directory()) continue;
    EXPECT_TRUE(found.empty()) << "more than one build: " << e.path();
    found = e.path();
  }
  return found;
}

/// The one entry file of a build's directory.
std::filesystem::path onlyEntry(const std::filesystem::path& dir) {
  std::filesystem::path found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_TRUE(found.empty()) << "more than one entry: " << e.path();
    found = e.path();
  }
  return found;
}

TEST(ModuleSitesStore, KeepsWhatItIsGivenForThatModuleOnly) {
  testing::TempDir dir("sites");
  const auto store = ModuleSitesStore::open((dir / "modules").string());
  ASSERT_TRUE(store.has_value());
  EXPECT_FALSE(store->load(someModule()).has_value());
  store->save(someModule(), someSites());
  const auto kept = store->load(someModule());
  ASSERT_TRUE(kept.has_value());
  expectSame(*kept, someSites());

  // Any other identity is another file: replaced, rewritten, touched, rebuilt.
  for (int field = 0; field < 5; ++field) {
    auto other = someModule();
    switch (field) {
      case 0:
        ++other.size;
        break;
      case 1:
        ++other.mtime_ns;
        break;
      case 2:
        ++other.ctime_ns;
        break;
      case 3:
        other.build_id.back() = '\x01';
        break;
      default:
        other.build_id.clear();
    }
    EXPECT_FALSE(store->load(other).has_value()) << "field " << field;
  }
  // Saved again for a newer file of the same inode, the entry is replaced, not added.
  auto newer = someModule();
  ++newer.mtime_ns;
  store->save(newer, ModuleSites{});
  EXPECT_TRUE(store->load(newer).has_value());
  EXPECT_FALSE(store->load(someModule()).has_value());
  EXPECT_FALSE(onlyEntry(buildDir(dir / "modules")).empty());
}

TEST(ModuleSitesStore, ADamagedEntryIsNoEntry) {
  testing::TempDir dir("sites");
  const auto store = ModuleSitesStore::open((dir / "modules").string());
  ASSERT_TRUE(store.has_value());
  store->save(someModule(), someSites());
  const auto entry = onlyEntry(buildDir(dir / "modules"));
  std::string whole;
  {
    std::ifstream in(entry, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(whole.size(), 64U);
  const auto write = [&](const std::string& text) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text;
  };
  for (std::size_t at = 0; at < whole.size(); at += 7) {
    auto damaged = whole;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    write(damaged);
    EXPECT_FALSE(store->load(someModule()).has_value()) << "byte " << at;
  }
  for (const std::size_t size : {std::size_t{0}, std::size_t{10}, whole.size() - 1}) {
    write(whole.substr(0, size));
    EXPECT_FALSE(store->load(someModule()).has_value()) << "cut at " << size;
  }
  write(whole + "more");
  EXPECT_FALSE(store->load(someModule()).has_value());
  write(whole);
  EXPECT_TRUE(store->load(someModule()).has_value());
}

TEST(ModuleSitesStore, OnlyADirectoryOfThisUserAloneIsUsed) {
  testing::TempDir dir("sites");
  const auto path = dir / "modules";
  ASSERT_TRUE(ModuleSitesStore::open(path.string()).has_value());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  ASSERT_EQ(::chmod(path.c_str(), 0777), 0);
  EXPECT_FALSE(ModuleSitesStore::open(path.string()).has_value());
  EXPECT_FALSE(ModuleSitesStore::open("relative/modules").has_value());
}

TEST(ModuleSitesStore, AModuleIsIdentifiedByItsFileAndBuildId) {
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&pthread_cond_wait), &info), 0);
  const UniqueFd libc(::open(info.dli_fname, O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(libc.valid());
  const auto id = identifyModule(libc.get());
  ASSERT_TRUE(id.has_value());
  EXPECT_FALSE(id->build_id.empty());  // Debian builds its libraries with build ids
  EXPECT_EQ(identifyModule(libc.get()), id);

  testing::TempDir dir("sites");
  std::filesystem::copy_file(info.dli_fname, dir / "copy.so");
  const UniqueFd copy(::open((dir / "copy.so").c_str(), O_RDONLY | O_CLOEXEC));
  const auto copied = identifyModule(copy.get());
  ASSERT_TRUE(copied.has_value());
  EXPECT_EQ(copied->build_id, id->build_id);
  EXPECT_NE(copied, id);  // another inode
}

TEST(ModuleSitesStore, TheSitesOfARealModuleComeBackAsTheyWereRead) {
  // libc: its exported sites and the static functions that take their callers' sites.
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&pthread_cond_wait), &info), 0);
  const UniqueFd libc(::open(info.dli_fname, O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(libc.valid());
  const auto read = loadModuleSites(libc.get());
  ASSERT_FALSE(read.ranges.empty());
  testing::TempDir dir("sites");
  const auto store = ModuleSitesStore::open((dir / "modules").string());
  ASSERT_TRUE(store.has_value());
  const auto id = identifyModule(libc.get()).value();
  store->save(id, read);
  const auto kept = store->load(id);
  ASSERT_TRUE(kept.has_value());
  expectSame(*kept, read);
}

TEST(ModuleSitesStore, WritersAtOnceLeaveAWholeEntry) {
  testing::TempDir dir("sites");
  const auto store = ModuleSitesStore::open((dir / "modules").string());
  ASSERT_TRUE(store.has_value());
  store->save(someModule(), someSites());
  std::atomic<int> torn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        store->save(someModule(), someSites());
        if (!store->load(someModule())) ++torn;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn, 0);
  onlyEntry(buildDir(dir / "modules"));  // no temporary file left behind
}

TEST(ModuleSitesStore, EachBuildHasItsEntriesAndOnlyTheLatestBuildsAreKept) {
  testing::TempDir dir("sites");
  const auto root = dir / "modules";
  ASSERT_EQ(::mkdir(root.c_str(), 0700), 0);
  // Other builds' directories, the oldest first; and something that is no build's.
  const auto now = std::filesystem::file_time_type::clock::now();
  for (int i = 0; i < 5; ++i) {
    const auto other = root / ("0000000" + std::to_string(i));
    std::filesystem::create_directory(other);
    std::ofstream(other / "1-2.sites") << "x";
    std::filesystem::last_write_time(other, now - std::chrono::hours(10 - i));
  }
  std::filesystem::create_directory(root / "notes");
  const auto store = ModuleSitesStore::open(root.string());
  ASSERT_TRUE(store.has_value());
  store->save(someModule(), someSites());
  EXPECT_TRUE(store->load(someModule()).has_value());
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  // Three others, the latest, besides this build's own; "notes" is not touched.
  ASSERT_EQ(left.size(), 5U);
  EXPECT_EQ(left[0], "00000002");
  EXPECT_EQ(left[1], "00000003");
  EXPECT_EQ(left[2], "00000004");
  EXPECT_EQ(left[4], "notes");
  EXPECT_TRUE(std::filesystem::exists(root / left[3] / "") && left[3].size() >= 32);
  // Opened again, nothing more goes.
  ASSERT_TRUE(ModuleSitesStore::open(root.string()).has_value());
  EXPECT_TRUE(std::filesystem::exists(root / "00000002"));
}

}  // namespace
}  // namespace wctmon::linux_platform
