// The Windows thread inspector against a 32-bit process that really deadlocks (the i686 build of
// the fixture, a WOW64 process; run under Wine's WoW64 here): the 64-bit inspector suspends its
// threads through Wow64SuspendThread, reads their 32-bit registers with Wow64GetThreadContext,
// walks their x86 stacks and resumes them; the hot-spot sampler reads a spinning thread's eip the
// same way.
#include <gtest/gtest.h>
#include <windows.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "platform/windows/capture_probes.h"
#include "platform/windows/hot_spot_sampler.h"
#include "platform/windows/wct_fixture_process.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon::windows_platform {
namespace {

using testing::describe;
using testing::hasFunction;
using testing::ref;
using testing::registerOf;
using testing::suspendCount;
using testing::threadsOf;
using testing::WctFixture;
using testing::wctFixture32Path;

std::vector<std::string> registerNames(const ThreadCapture& c) {
  std::vector<std::string> names;
  for (const auto& r : c.registers) names.push_back(r.name);
  return names;
}

/// How the target maps `address`: committed, and with which protection (0 when not committed).
DWORD protectionAt(HANDLE process, std::uint64_t address) {
  MEMORY_BASIC_INFORMATION info{};
  if (::VirtualQueryEx(process, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address)),
                       &info, sizeof(info)) == 0 ||
      info.State != MEM_COMMIT) {
    return 0;
  }
  return info.Protect & 0xff;
}

bool executable(DWORD protection) {
  return protection == PAGE_EXECUTE || protection == PAGE_EXECUTE_READ ||
         protection == PAGE_EXECUTE_READWRITE || protection == PAGE_EXECUTE_WRITECOPY;
}

const std::vector<std::string> kX86Registers = {"eip", "esp", "ebp", "eax",    "ebx", "ecx",
                                                "edx", "esi", "edi", "eflags", "cs",  "ss",
                                                "ds",  "es",  "fs",  "gs"};

TEST(Wow64CaptureTest, TheFixtureIsA32BitProcess) {
  WctFixture fx(L"idle 1", std::chrono::seconds(30), wctFixture32Path());
  BOOL wow64 = FALSE;
  ASSERT_NE(::IsWow64Process(fx.process(), &wow64), FALSE) << ::GetLastError();
  EXPECT_TRUE(wow64) << "wctmon-wct-fixture32.exe does not run as a WOW64 process";
  USHORT process_machine = 0;
  USHORT native_machine = 0;
  if (::IsWow64Process2(fx.process(), &process_machine, &native_machine) != FALSE) {
    EXPECT_EQ(process_machine, IMAGE_FILE_MACHINE_I386);
  }
}

TEST(Wow64CaptureTest, DeadlockedThreadsAreCapturedAsX86AndReleased) {
  WctFixture fx(L"cs-abba", std::chrono::seconds(30), wctFixture32Path());
  ASSERT_EQ(fx.tids().size(), 2U);

  WindowsThreadInspector inspector;
  const std::vector<ThreadRef> wanted = {ref(fx.pid(), fx.tids()[0]), ref(fx.pid(), fx.tids()[1])};
  const auto captures = inspector.capture(wanted);
  ASSERT_EQ(captures.size(), 2U);
  for (std::size_t i = 0; i < captures.size(); ++i) {
    const auto& c = captures[i];
    std::printf("%s", describe(c).c_str());
    SCOPED_TRACE(describe(c));
    EXPECT_EQ(c.thread, wanted[i]);
    ASSERT_TRUE(c.captured) << c.error;
    EXPECT_EQ(c.error, "");
    EXPECT_EQ(c.method, CaptureMethod::kStopped);
    // The 32-bit context (Wow64GetThreadContext), not the 64-bit one of WOW64's own layer.
    EXPECT_EQ(c.architecture, "x86");
    EXPECT_EQ(registerNames(c), kX86Registers);
    const std::uint64_t eip = registerOf(c, "eip");
    const std::uint64_t esp = registerOf(c, "esp");
    EXPECT_NE(eip, 0U);
    EXPECT_NE(esp, 0U);
    EXPECT_LE(eip, 0xffffffffU);
    EXPECT_LE(esp, 0xffffffffU);
    // What the registers say holds in the target: eip is in code, esp in a writable stack.
    EXPECT_TRUE(executable(protectionAt(fx.process(), eip))) << std::hex << eip;
    EXPECT_EQ(protectionAt(fx.process(), esp), static_cast<DWORD>(PAGE_READWRITE))
        << std::hex << esp;
    EXPECT_GT(c.stop_time.count(), 0);
    // The x86 walk starts at eip, in the system call the thread waits in: a stub of the 32-bit
    // ntdll that its export names (NtWaitForAlertByThreadId, NtWaitForSingleObject...). Under
    // Wine the walk from a 64-bit process ends in that ntdll; the fixture's own frames below it
    // are named on Windows.
    ASSERT_FALSE(c.frames.empty());
    EXPECT_EQ(c.frames[0].pc, eip);
    EXPECT_EQ(c.frames[0].module, "ntdll.dll");
    EXPECT_TRUE(c.frames[0].function.starts_with("Nt")) << c.frames[0].function;
    EXPECT_LE(c.frames.size(), WindowsThreadInspector::kMaxFrames);
    for (const auto& f : c.frames) EXPECT_LE(f.pc, 0xffffffffU);
  }

  // Every suspension was undone, and the process runs on.
  for (const DWORD tid : threadsOf(fx.pid())) EXPECT_EQ(suspendCount(tid), 0U) << tid;
  EXPECT_EQ(fx.ask("ping"), "pong");

  // Resumed, the threads went back to their waits: a second capture finds them at the same eip.
  const auto again = inspector.capture(wanted);
  ASSERT_EQ(again.size(), 2U);
  for (std::size_t i = 0; i < again.size(); ++i) {
    SCOPED_TRACE(describe(again[i]));
    ASSERT_TRUE(again[i].captured) << again[i].error;
    EXPECT_EQ(again[i].architecture, "x86");
    EXPECT_EQ(registerOf(again[i], "eip"), registerOf(captures[i], "eip"));
  }
}

TEST(Wow64CaptureTest, ThreadsOf32And64BitProcessesInOneCall) {
  WctFixture x86(L"idle 1", std::chrono::seconds(30), wctFixture32Path());
  WctFixture x64(L"idle 1");
  const std::vector<ThreadRef> wanted = {ref(x86.pid(), x86.tids()[0]),
                                         ref(x64.pid(), x64.tids()[0])};
  WindowsThreadInspector inspector;
  const auto captures = inspector.capture(wanted);
  ASSERT_EQ(captures.size(), 2U);
  ASSERT_TRUE(captures[0].captured) << captures[0].error;
  ASSERT_TRUE(captures[1].captured) << captures[1].error;
  EXPECT_EQ(captures[0].architecture, "x86");
  EXPECT_NE(registerOf(captures[0], "eip"), 0U);
  EXPECT_EQ(captures[1].architecture, "x86_64");
  EXPECT_NE(registerOf(captures[1], "rip"), 0U);
  EXPECT_TRUE(hasFunction(captures[1], "idleThread")) << describe(captures[1]);
}

TEST(Wow64CaptureTest, AThreadSpinningInA32BitProcessIsProfiledFromItsEipAndReleased) {
  WctFixture fx(L"spin", std::chrono::seconds(30), wctFixture32Path());
  ASSERT_EQ(fx.tids().size(), 1U);
  const std::atomic<bool> no_stop{false};
  auto profile = SuspendingHotSpotSampler::profile(ref(fx.pid(), fx.tids()[0]),
                                                   std::chrono::milliseconds(500), no_stop);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  for (const auto* window : {&profile->first, &profile->second}) {
    ASSERT_FALSE(window->empty());
    const auto& hottest = (*window)[0];
    std::printf("%s (%s) %u\n", hottest.function.c_str(), hottest.module.c_str(), hottest.samples);
    // The 32-bit program's own function, whether DbgHelp names it from its DWARF or its
    // export (i686 C names carry a leading underscore).
    EXPECT_NE(hottest.function.find("wctmon_fixture_spin"), std::string::npos) << hottest.function;
    EXPECT_EQ(hottest.module, "wctmon-wct-fixture32.exe");
    EXPECT_GE(hottest.samples, 20U);
  }
  EXPECT_EQ(suspendCount(fx.tids()[0]), 0U);
  EXPECT_EQ(fx.ask("ping"), "pong");
}

}  // namespace
}  // namespace wctmon::windows_platform
