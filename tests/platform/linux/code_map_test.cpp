#include "platform/linux/code_map.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>

namespace wctmon::linux_platform {
namespace {

TEST(CodeMap, TheMapsTextGivesTheExecutableFileMappingsOnly) {
  constexpr std::string_view kMaps =
      "55d0c0000000-55d0c0002000 r--p 00000000 08:01 131 /usr/bin/prog\n"
      "55d0c0002000-55d0c0010000 r-xp 00002000 08:01 131 /usr/bin/prog\n"
      "7f0000000000-7f0000800000 rw-p 00000000 00:00 0 \n"
      "7f0000800000-7f0000801000 ---p 00000000 00:00 0 \n"
      "7f1000028000-7f10001bd000 r-xp 00028000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f2000000000-7f2000001000 r-xp 00000000 00:05 7 /memfd:jit (deleted)\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"
      "garbage\n";
  const auto mappings = executableFileMappings(kMaps);
  const std::vector<FileMapping> expected{
      {0x55d0c0002000, 0x55d0c0010000, 0x2000},
      {0x7f1000028000, 0x7f10001bd000, 0x28000},
      {0x7f2000000000, 0x7f2000001000, 0},
  };
  EXPECT_EQ(mappings, expected);
}

TEST(CodeMap, OurOwnProcessHasGlibcsCallSitesWhereverTheKernelListsThem) {
  // Read through PROCMAP_QUERY where the kernel has it, else from the maps text: the same sites.
  const auto map = CodeMap::read(Pid{::getpid()});
  // A return address points past its call: the site is looked up at the byte before it.
  const auto cond_wait = reinterpret_cast<std::uint64_t>(&pthread_cond_wait) + 1;
  const auto* site = map.siteAt(cond_wait);
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->role, CallSiteRole::kCondition);
  EXPECT_EQ(map.siteAt(reinterpret_cast<std::uint64_t>(&::getpid) + 1), nullptr);

  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  const auto listed = executableFileMappings(text.str());
  EXPECT_TRUE(std::any_of(listed.begin(), listed.end(), [&](const FileMapping& m) {
    return cond_wait >= m.begin && cond_wait < m.end;
  }));
  EXPECT_EQ(CodeMap::recent(Pid{::getpid()}, 1234).get(),
            CodeMap::recent(Pid{::getpid()}, 1234).get());  // the same read, within a second
}

TEST(CallSites, ANameMayBeACallSiteExactlyWhenItHoldsAHint) {
  // The hints, as the symbol tables spell them: a name holding one anywhere may be a call site.
  constexpr std::array<std::string_view, 19> kHints = {"pthread_",
                                                       "sem_",
                                                       "lll_lock",
                                                       "Mutex",
                                                       "CondVar",
                                                       "Condvar",
                                                       "RwLock",
                                                       "park",
                                                       "Notification",
                                                       "BlockingCounter",
                                                       "runtime.note",
                                                       "runtime.futexsleep",
                                                       "ObjectMonitor",
                                                       "Semaphore",
                                                       "JavaThread5sleep",
                                                       "signal_wait",
                                                       "gpr_cv_wait",
                                                       "PyThread_acquire_lock",
                                                       "AbslInternalPerThreadSemWait"};
  for (const auto hint : kHints) {
    const std::string whole(hint);
    EXPECT_TRUE(mayBeCallSite(whole)) << whole;
    EXPECT_TRUE(mayBeCallSite("_ZN4absl" + whole)) << whole;
    EXPECT_TRUE(mayBeCallSite(whole + "@GLIBC_2.2.5")) << whole;
    EXPECT_TRUE(mayBeCallSite("x" + whole + "y")) << whole;
    // One character short, or broken in the middle, it is no hint.
    EXPECT_FALSE(mayBeCallSite(whole.substr(0, whole.size() - 1))) << whole;
    EXPECT_FALSE(mayBeCallSite("_Z" + whole.substr(1))) << whole;
    std::string broken = whole;
    broken[broken.size() / 2] = '#';
    EXPECT_FALSE(mayBeCallSite(broken)) << broken;
  }
  EXPECT_FALSE(mayBeCallSite(""));
  EXPECT_FALSE(mayBeCallSite("sem"));
  EXPECT_FALSE(mayBeCallSite("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE7reserveEm"));
  EXPECT_FALSE(mayBeCallSite("memcpy@GLIBC_2.14"));
  EXPECT_TRUE(mayBeCallSite("_ZN4absl5Mutex4LockEv"));
  EXPECT_TRUE(mayBeCallSite("_ZN3std6thread4park17h0123456789abcdefE"));
}

}  // namespace
}  // namespace wctmon::linux_platform
