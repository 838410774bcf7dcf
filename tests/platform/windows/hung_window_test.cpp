// The window prober and the hung-window tracker against a real window (run under Wine here):
// the fixture's window thread stops pumping while it waits on an event, and pumps again when
// the test releases it.
#include <gtest/gtest.h>
#include <windows.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "core/hung_window_tracker.h"
#include "platform/windows/wct_fixture_process.h"
#include "platform/windows/window_prober.h"

namespace wctmon::windows_platform {
namespace {

using namespace std::chrono_literals;
using testing::besideThisTest;
using testing::WctFixture;
using Steady = std::chrono::steady_clock;

/// Short, to see a silent window soon; a window that pumps is asked with the default timeout,
/// which a loaded machine does not exceed.
constexpr auto kProbeTimeout = 200ms;
constexpr std::chrono::milliseconds kThreshold = 2s;

std::wstring fixturePath() { return besideThisTest(L"wctmon-hung-window.exe"); }

long long msSince(Steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start).count();
}

/// The fixture's one window in a reading, if there.
std::optional<WindowReading> fixtureWindow(const std::vector<WindowReading>& readings,
                                           const WctFixture& fx) {
  const auto it = std::find_if(readings.begin(), readings.end(), [&](const WindowReading& w) {
    return w.pid.value == static_cast<std::int32_t>(fx.pid());
  });
  if (it == readings.end()) return std::nullopt;
  return *it;
}

/// The fixture's window once it is listed (a new window's first listing can lag its creation).
WindowReading awaitWindow(WindowsWindowProber& prober, const WctFixture& fx) {
  const Pid pid{static_cast<std::int32_t>(fx.pid())};
  const auto start = Steady::now();
  for (;;) {
    auto readings = prober.windowsOf(std::span(&pid, 1));
    if (readings.ok()) {
      if (auto w = fixtureWindow(*readings, fx)) return *w;
    }
    if (Steady::now() - start > 10s) {
      ADD_FAILURE() << "the fixture's window was never listed";
      return {};
    }
    std::this_thread::sleep_for(50ms);
  }
}

TEST(WindowProberTest, APumpingWindowAnswersAndIsNeverReported) {
  WctFixture fx(L"", 30s, fixturePath());
  ASSERT_EQ(fx.tids().size(), 1U);
  WindowsWindowProber prober;
  const auto first = awaitWindow(prober, fx);
  EXPECT_NE(first.handle, 0U);
  EXPECT_EQ(first.tid.value, static_cast<std::int32_t>(fx.tids()[0]));
  EXPECT_EQ(first.title, "wctmon hung window");
  EXPECT_TRUE(first.responding);

  SystemClock clock;
  HungWindowTracker tracker(clock);
  const std::vector<WindowOwner> owners{{first.pid, "gui"}};
  const std::vector<Pid> pids{first.pid};
  const auto start = Steady::now();
  while (Steady::now() - start < kThreshold + 1s) {
    auto readings = prober.windowsOf(pids);
    ASSERT_TRUE(readings.ok()) << readings.error().message;
    const auto w = fixtureWindow(*readings, fx);
    ASSERT_TRUE(w.has_value());
    EXPECT_TRUE(w->responding);
    EXPECT_TRUE(tracker.update(*readings, owners, kThreshold).empty());
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(fx.ask("ping"), "pong");
}

TEST(WindowProberTest, WindowsOfOtherProcessesAreNotListed) {
  WctFixture fx(L"", 30s, fixturePath());
  WindowsWindowProber prober(kProbeTimeout);
  (void)awaitWindow(prober, fx);
  const std::vector<Pid> others{Pid{static_cast<std::int32_t>(::GetCurrentProcessId())}};
  auto readings = prober.windowsOf(others);
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  EXPECT_FALSE(fixtureWindow(*readings, fx).has_value());
  readings = prober.windowsOf({});
  ASSERT_TRUE(readings.ok());
  EXPECT_TRUE(readings->empty());
}

TEST(WindowProberTest, AWindowThatStopsPumpingIsHungAfterTheThresholdAndNotOnceReleased) {
  WctFixture fx(L"", 30s, fixturePath());
  WindowsWindowProber patient;
  const auto window = awaitWindow(patient, fx);
  ASSERT_TRUE(window.responding);
  WindowsWindowProber prober(kProbeTimeout);
  ASSERT_EQ(fx.ask("hang"), "hanging");
  const auto hung_at = Steady::now();

  SystemClock clock;
  HungWindowTracker tracker(clock);
  const std::vector<WindowOwner> owners{{window.pid, "gui"}};
  const std::vector<Pid> pids{window.pid};
  std::optional<Symptom> found;
  long long found_ms = 0;
  long long slowest_probe_ms = 0;
  int silent_readings = 0;
  while (!found && Steady::now() - hung_at < kThreshold + 10s) {
    const auto probe_start = Steady::now();
    auto readings = prober.windowsOf(pids);
    slowest_probe_ms = std::max(slowest_probe_ms, msSince(probe_start));
    ASSERT_TRUE(readings.ok()) << readings.error().message;
    const auto w = fixtureWindow(*readings, fx);
    ASSERT_TRUE(w.has_value()) << "a hung window is still listed";
    if (!w->responding) ++silent_readings;
    auto symptoms = tracker.update(*readings, owners, kThreshold);
    if (!symptoms.empty()) {
      found = symptoms.front();
      found_ms = msSince(hung_at);
    }
    std::this_thread::sleep_for(100ms);
  }
  std::printf(
      "hung window: reported after %lld ms (threshold %lld ms), %d silent readings, "
      "slowest probe %lld ms\n",
      found_ms, static_cast<long long>(kThreshold.count()), silent_readings, slowest_probe_ms);
  ASSERT_TRUE(found.has_value()) << "never reported hung";
  EXPECT_GE(found_ms, kThreshold.count());
  EXPECT_EQ(found->kind, IncidentKind::kWindowHung);
  EXPECT_EQ(found->pid, window.pid);
  EXPECT_EQ(found->target, "gui");
  EXPECT_EQ(found->threads, std::vector<Tid>{window.tid});
  char key[64];
  std::snprintf(key, sizeof(key), "window 0x%llx", static_cast<unsigned long long>(window.handle));
  EXPECT_EQ(found->key, key);
  EXPECT_NE(found->summary.find("wctmon hung window"), std::string::npos) << found->summary;
  // A probe of a silent window costs at most its timeout (and nothing once judged hung).
  EXPECT_LT(slowest_probe_ms, (kProbeTimeout + 1s).count());

  ASSERT_EQ(fx.ask("release"), "released");
  std::vector<Symptom> after;
  const auto released_at = Steady::now();
  for (;;) {
    auto readings = prober.windowsOf(pids);
    ASSERT_TRUE(readings.ok()) << readings.error().message;
    after = tracker.update(*readings, owners, kThreshold);
    if (after.empty() || Steady::now() - released_at > 5s) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(after.empty()) << "still reported hung after its release";
  std::printf("hung window: answered again %lld ms after its release\n", msSince(released_at));
}

/// What this system's user32 does with a window whose thread does not pump: printed for the
/// record (Wine and Windows differ), asserted only where both must agree.
TEST(WindowProberTest, WhatTheSystemSaysOfASilentWindow) {
  WctFixture fx(L"", 30s, fixturePath());
  WindowsWindowProber prober(kProbeTimeout);
  const auto window = awaitWindow(prober, fx);
  const HWND hwnd = reinterpret_cast<HWND>(static_cast<std::uintptr_t>(window.handle));
  using IsHungFn = BOOL(WINAPI*)(HWND);
  const auto is_hung = reinterpret_cast<IsHungFn>(reinterpret_cast<void*>(
      ::GetProcAddress(::GetModuleHandleW(L"user32.dll"), "IsHungAppWindow")));
  std::printf("IsHungAppWindow: %s\n", is_hung != nullptr ? "exported" : "missing");

  const auto probe = [&](const char* when) {
    auto start = Steady::now();
    const BOOL hung = is_hung != nullptr ? is_hung(hwnd) : FALSE;
    const long long hung_ms = msSince(start);
    start = Steady::now();
    DWORD_PTR result = 0;
    ::SetLastError(0);
    const LRESULT answered =
        ::SendMessageTimeoutW(hwnd, WM_NULL, 0, 0, SMTO_ABORTIFHUNG | SMTO_BLOCK, 500, &result);
    const DWORD error = ::GetLastError();
    const long long send_ms = msSince(start);
    std::printf(
        "%s: IsHungAppWindow %d (%lld ms); SendMessageTimeoutW(500 ms) %s, error %lu "
        "(%lld ms)\n",
        when, hung, hung_ms, answered != 0 ? "answered" : "failed", error, send_ms);
    return answered != 0;
  };
  EXPECT_TRUE(probe("pumping"));
  ASSERT_EQ(fx.ask("hang"), "hanging");
  EXPECT_FALSE(probe("silent at once"));
  std::this_thread::sleep_for(6s);  // past the 5 s after which Windows judges a window hung
  EXPECT_FALSE(probe("silent for 6 s"));
  ASSERT_EQ(fx.ask("release"), "released");
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(probe("released"));
}

}  // namespace
}  // namespace wctmon::windows_platform
