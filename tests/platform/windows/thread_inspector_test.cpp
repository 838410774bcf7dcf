// The Windows thread inspector against processes that really deadlock (run under Wine here):
// registers and a named stack of each blocked thread, every suspension undone, and clear errors
// for threads that are gone or ours.
#include <gtest/gtest.h>
#include <windows.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "platform/windows/capture_probes.h"
#include "platform/windows/privileges.h"
#include "platform/windows/wct_fixture_process.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon::windows_platform {
namespace {

using testing::besideThisTest;
using testing::describe;
using testing::hasFunction;
using testing::ref;
using testing::registerOf;
using testing::suspendCount;
using testing::threadsOf;
using testing::WctFixture;

/// The frame of the function named `part`: its source file and line, as DbgHelp read them from
/// the fixture's DWARF.
std::string sourceOf(const ThreadCapture& c, const std::string& part) {
  for (const auto& f : c.frames) {
    if (f.function.find(part) != std::string::npos) return f.file + ":" + std::to_string(f.line);
  }
  return {};
}

/// Inside the wait: the innermost frame is in ntdll, or a frame names the wait itself.
bool inWait(const ThreadCapture& c) {
  if (!c.frames.empty() && c.frames[0].module == "ntdll.dll") return true;
  for (const char* wait : {"RtlEnterCriticalSection", "EnterCriticalSection",
                           "NtWaitForSingleObject", "WaitForSingleObject"}) {
    if (hasFunction(c, wait)) return true;
  }
  return false;
}

struct Abba {
  const wchar_t* scenario;
  const char* function;  // the fixture's own frame each blocked thread shows
};

class DeadlockedThreads : public ::testing::TestWithParam<Abba> {};

TEST_P(DeadlockedThreads, CapturedInTheirWaitAndReleased) {
  WctFixture fx(GetParam().scenario);
  ASSERT_EQ(fx.tids().size(), 2U);
  const auto listed = threadsOf(fx.pid());
  for (const DWORD tid : fx.tids()) EXPECT_TRUE(listed.count(tid)) << tid;

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
    EXPECT_EQ(c.architecture, "x86_64");
    EXPECT_NE(registerOf(c, "rip"), 0U);
    EXPECT_NE(registerOf(c, "rsp"), 0U);
    EXPECT_GT(c.stop_time.count(), 0);
    ASSERT_FALSE(c.frames.empty());
    EXPECT_EQ(c.frames[0].pc, registerOf(c, "rip"));
    EXPECT_TRUE(inWait(c));
    // The innermost frame is the system call the thread waits in (NtWaitForAlertByThreadId,
    // NtWaitForMultipleObjects...): a stub of ntdll that only its export names.
    EXPECT_EQ(c.frames[0].module, "ntdll.dll");
    EXPECT_TRUE(c.frames[0].function.starts_with("Nt")) << c.frames[0].function;
    EXPECT_TRUE(hasFunction(c, GetParam().function)) << describe(c);
    const auto source = sourceOf(c, GetParam().function);
    EXPECT_NE(source.find("wct_fixture.cpp:"), std::string::npos) << source;
    EXPECT_EQ(source.find("wct_fixture.cpp:0"), std::string::npos) << source;
    EXPECT_LE(c.frames.size(), WindowsThreadInspector::kMaxFrames);
  }

  // Every suspension was undone, and the process runs on.
  for (const DWORD tid : threadsOf(fx.pid())) EXPECT_EQ(suspendCount(tid), 0U) << tid;
  EXPECT_EQ(fx.ask("ping"), "pong");

  // Resumed, the threads went back to their waits: a second capture finds them there.
  const auto again = inspector.capture(wanted);
  for (const auto& c : again) {
    SCOPED_TRACE(describe(c));
    ASSERT_TRUE(c.captured) << c.error;
    EXPECT_TRUE(inWait(c));
    EXPECT_TRUE(hasFunction(c, GetParam().function)) << describe(c);
  }
  EXPECT_EQ(again[0].frames[0].pc, captures[0].frames[0].pc);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, DeadlockedThreads,
                         ::testing::Values(Abba{L"cs-abba", "lockFirstThenSecond"},
                                           Abba{L"mutex-abba", "waitFirstThenSecond"}),
                         [](const ::testing::TestParamInfo<Abba>& param) {
                           return std::string(param.param.function);
                         });

TEST(WindowsThreadInspectorTest, AGoneThreadIsAClearErrorAndTheOthersAreStillCaptured) {
  WctFixture fx(L"idle 1");
  // A thread that has ended: its id names no thread (or, reused, a thread of another process).
  DWORD gone = 0;
  const HANDLE ended = ::CreateThread(
      nullptr, 0, [](void*) -> DWORD { return 0; }, nullptr, 0, &gone);
  ASSERT_NE(ended, nullptr);
  ::WaitForSingleObject(ended, INFINITE);
  ::CloseHandle(ended);

  WindowsThreadInspector inspector;
  const std::vector<ThreadRef> wanted = {ref(fx.pid(), gone), ref(fx.pid(), fx.tids()[0])};
  const auto captures = inspector.capture(wanted);
  ASSERT_EQ(captures.size(), 2U);
  EXPECT_FALSE(captures[0].captured);
  EXPECT_EQ(captures[0].error.rfind("thread " + std::to_string(gone) + " is gone", 0), 0U)
      << captures[0].error;
  EXPECT_TRUE(captures[0].registers.empty());
  EXPECT_TRUE(captures[1].captured) << captures[1].error;
  EXPECT_TRUE(hasFunction(captures[1], "idleThread")) << describe(captures[1]);
}

TEST(WindowsThreadInspectorTest, ThreadsOfAProcessThatHasExitedAreGone) {
  auto fx = std::make_unique<WctFixture>(L"idle 1");
  const ThreadRef thread = ref(fx->pid(), fx->tids()[0]);
  fx.reset();
  WindowsThreadInspector inspector;
  const auto captures = inspector.capture(std::vector<ThreadRef>{thread});
  ASSERT_EQ(captures.size(), 1U);
  EXPECT_FALSE(captures[0].captured);
  EXPECT_EQ(captures[0].error.rfind("thread " + std::to_string(thread.tid.value) + " is gone", 0),
            0U)
      << captures[0].error;
}

TEST(WindowsThreadInspectorTest, ThreadsOfThisProcessAreRefused) {
  std::atomic<bool> stop{false};
  std::atomic<DWORD> other{0};
  std::thread worker([&] {
    other = ::GetCurrentThreadId();
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (other == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  WctFixture fx(L"idle 1");
  const DWORD self = ::GetCurrentProcessId();
  WindowsThreadInspector inspector;
  // Our own threads under our pid, and one of them under another process's pid: refused both
  // ways, never suspended.
  const std::vector<ThreadRef> wanted = {ref(self, ::GetCurrentThreadId()), ref(self, other),
                                         ref(fx.pid(), other)};
  const auto captures = inspector.capture(wanted);
  stop = true;
  worker.join();
  ASSERT_EQ(captures.size(), 3U);
  for (const auto& c : captures) {
    EXPECT_FALSE(c.captured);
    EXPECT_NE(c.error.find("this process"), std::string::npos) << c.error;
    EXPECT_TRUE(c.registers.empty());
  }
}

TEST(WindowsThreadInspectorTest, AThreadSuspendedBySomeoneElseStaysSuspended) {
  WctFixture fx(L"idle 1");
  const DWORD tid = fx.tids()[0];
  const HANDLE thread = ::OpenThread(THREAD_SUSPEND_RESUME, FALSE, tid);
  ASSERT_NE(thread, nullptr);
  ASSERT_EQ(::SuspendThread(thread), 0U);
  WindowsThreadInspector inspector;
  const auto captures = inspector.capture(std::vector<ThreadRef>{ref(fx.pid(), tid)});
  ASSERT_TRUE(captures[0].captured) << captures[0].error;
  EXPECT_NE(captures[0].note.find("already suspended"), std::string::npos) << captures[0].note;
  EXPECT_EQ(::ResumeThread(thread), 1U);  // ours, still in place
  ::CloseHandle(thread);
  EXPECT_EQ(suspendCount(tid), 0U);
}

/// Runs `command` to its end (at most a minute); its exit code, or -1.
long runToTheEnd(std::wstring command) {
  STARTUPINFOW startup{};
  startup.cb = sizeof(startup);
  PROCESS_INFORMATION info{};
  if (::CreateProcessW(nullptr, command.data(), nullptr, nullptr, FALSE, 0, nullptr, nullptr,
                       &startup, &info) == FALSE) {
    return -1;
  }
  ::CloseHandle(info.hThread);
  DWORD code = static_cast<DWORD>(-1);
  if (::WaitForSingleObject(info.hProcess, 60000) == WAIT_OBJECT_0) {
    ::GetExitCodeProcess(info.hProcess, &code);
  } else {
    ::TerminateProcess(info.hProcess, 1);
  }
  ::CloseHandle(info.hProcess);
  return static_cast<long>(code);
}

TEST(WindowsThreadInspectorTest, ACapturerThatDiesMidCaptureLeavesNoThreadSuspended) {
  // A capturer (wctmon-capture-crash) captures the fixture's threads on four threads and dies
  // the moment it holds one suspended: of an unhandled exception or an abort. Windows would keep
  // that thread suspended for ever; the capturer's last-chance handlers resume it. An exit with a
  // capture still running is left to the TLS callback that Windows calls once the other threads
  // are ended; Wine does not call an executable's TLS callbacks at its end, so that case is not
  // tested here. A TerminateProcess from outside runs no handler: that death is not covered.
  WctFixture fixture(L"cs-abba");
  std::wstring report(MAX_PATH, L'\0');
  report.resize(::GetTempPathW(MAX_PATH, report.data()));
  report += L"wctmon-capture-crash-" + std::to_wstring(::GetCurrentProcessId()) + L".txt";
  for (const std::wstring mode : {L"exception", L"abort"}) {
    for (int round = 0; round < 5; ++round) {
      ::DeleteFileW(report.c_str());
      const long code =
          runToTheEnd(L"\"" + besideThisTest(L"wctmon-capture-crash.exe") + L"\" " +
                      std::to_wstring(fixture.pid()) + L" " + mode + L" \"" + report + L"\"");
      EXPECT_NE(code, -1);
      EXPECT_NE(code, 2) << "the capturer could not start its captures";
      std::FILE* said = ::_wfopen(report.c_str(), L"r");
      ASSERT_NE(said, nullptr);
      unsigned held = 0;
      EXPECT_EQ(std::fscanf(said, "held %u", &held), 1);
      std::fclose(said);
      // It died holding at least one thread suspended...
      EXPECT_GT(held, 0U);
      // ...and every thread of the fixture runs again.
      for (const DWORD tid : threadsOf(fixture.pid())) {
        EXPECT_EQ(suspendCount(tid), 0U)
            << "thread " << tid << " after a death by " << std::string(mode.begin(), mode.end());
      }
    }
  }
  ::DeleteFileW(report.c_str());
}

TEST(WindowsThreadInspectorTest, ThreadsOfSeveralProcessesComeBackInTheOrderAsked) {
  WctFixture first(L"idle 2");
  WctFixture second(L"cs-abba");
  const std::vector<ThreadRef> wanted = {
      ref(first.pid(), first.tids()[0]), ref(second.pid(), second.tids()[0]),
      ref(first.pid(), first.tids()[1]), ref(second.pid(), second.tids()[1])};
  WindowsThreadInspector inspector;
  const auto captures = inspector.capture(wanted);
  ASSERT_EQ(captures.size(), wanted.size());
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    EXPECT_EQ(captures[i].thread, wanted[i]);
    EXPECT_TRUE(captures[i].captured) << captures[i].error;
    EXPECT_TRUE(hasFunction(captures[i], i % 2 == 0 ? "idleThread" : "lockFirstThenSecond"))
        << describe(captures[i]);
  }
}

TEST(WindowsThreadInspectorTest, DebugPrivilegeIsEnabledOrSaysWhyNot) {
  const auto privilege = enableDebugPrivilege();
  std::printf("SeDebugPrivilege: %s\n",
              privilege.enabled ? "enabled" : ("not enabled: " + privilege.why_not).c_str());
  EXPECT_EQ(privilege.enabled, privilege.why_not.empty()) << privilege.why_not;
}

std::chrono::nanoseconds percentile(std::vector<std::chrono::nanoseconds> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// What a stop costs the target here, printed rather than asserted (it depends on the machine):
// the bare SuspendThread -> GetThreadContext -> ResumeThread, and the inspector's whole stop
// (which also copies the top of the stack).
TEST(WindowsThreadInspectorTest, StopTimeIsMeasured) {
  constexpr std::size_t kStops = 200;
  WctFixture fx(L"idle 4");
  std::vector<std::chrono::nanoseconds> bare;
  for (std::size_t i = 0; i < kStops; ++i) {
    const DWORD tid = fx.tids()[i % fx.tids().size()];
    const HANDLE thread = ::OpenThread(THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT, FALSE, tid);
    ASSERT_NE(thread, nullptr);
    CONTEXT context{};
    context.ContextFlags = CONTEXT_FULL;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_NE(::SuspendThread(thread), static_cast<DWORD>(-1));
    const BOOL got = ::GetThreadContext(thread, &context);
    ::ResumeThread(thread);
    bare.push_back(std::chrono::steady_clock::now() - start);
    ::CloseHandle(thread);
    ASSERT_NE(got, FALSE);
  }
  // The inspector's stops, twenty threads a call: DbgHelp's set-up per call is slow under Wine.
  WctFixture many(L"idle 20");
  std::vector<ThreadRef> wanted;
  for (const DWORD tid : many.tids()) wanted.push_back(ref(many.pid(), tid));
  WindowsThreadInspector inspector;
  std::vector<std::chrono::nanoseconds> whole;
  while (whole.size() < kStops) {
    for (const auto& c : inspector.capture(wanted)) {
      ASSERT_TRUE(c.captured) << c.error;
      whole.push_back(c.stop_time);
    }
  }
  const auto us = [](std::chrono::nanoseconds d) {
    return static_cast<double>(d.count()) / 1000.0;
  };
  std::printf(
      "stop time over %zu stops: SuspendThread+GetThreadContext+ResumeThread median "
      "%.1f us, p99 %.1f us; inspector (with the stack copy) median %.1f us, p99 %.1f us\n",
      kStops, us(percentile(bare, 0.5)), us(percentile(bare, 0.99)), us(percentile(whole, 0.5)),
      us(percentile(whole, 0.99)));
  for (const DWORD tid : threadsOf(many.pid())) EXPECT_EQ(suspendCount(tid), 0U) << tid;
  EXPECT_EQ(many.ask("ping"), "pong");
}

}  // namespace
}  // namespace wctmon::windows_platform
