// The Windows hot-spot sampler against real processes (run under Wine here): a thread spinning in
// one function is found there in both windows, and left running, never suspended; a thread that
// works through six functions is not taken for a spinning one; a thread that exits during its
// profile ends it with an error. And the CPU time a sample reads grows for a spinning thread only.
#include "platform/windows/hot_spot_sampler.h"

#include <gtest/gtest.h>
#include <windows.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/busy_verdict.h"
#include "platform/windows/capture_probes.h"
#include "platform/windows/suspension_record.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/wct_fixture_process.h"

namespace wctmon::windows_platform {
namespace {

using namespace std::chrono_literals;
using testing::ref;
using testing::suspendCount;
using testing::WctFixture;

const std::atomic<bool> kNoStop{false};

std::uint32_t total(const std::vector<HotFunction>& hot) {
  std::uint32_t n = 0;
  for (const auto& h : hot) n += h.samples;
  return n;
}

std::string describe(const ThreadProfile& p) {
  return "first: " + hotFunctionsText(p.first) + "; second: " + hotFunctionsText(p.second);
}

/// How many rounds the fixture's spinning or working thread has made.
std::uint64_t rounds(WctFixture& fx) { return std::stoull("0" + fx.ask("count")); }

TEST(HotSpotSampler, ASpinningThreadIsFoundInItsFunctionInBothWindowsAndKeepsRunning) {
  WctFixture fx(L"spin");
  ASSERT_EQ(fx.tids().size(), 1U);
  const DWORD tid = fx.tids()[0];
  const auto before = rounds(fx);

  const auto started = std::chrono::steady_clock::now();
  auto profile = SuspendingHotSpotSampler::profile(ref(fx.pid(), tid), 1000ms, kNoStop);
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  std::printf(
      "%s (%lld ms)\n", describe(*profile).c_str(),
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_EQ(profile->window, 1000ms);
  for (const auto* window : {&profile->first, &profile->second}) {
    ASSERT_FALSE(window->empty());
    // About 100 a second; Wine's scheduler and a loaded machine may cost some.
    EXPECT_GE(total(*window), 50U) << describe(*profile);
    EXPECT_LE(total(*window), 102U) << describe(*profile);
    EXPECT_EQ((*window)[0].function, "wctmon_fixture_spin") << describe(*profile);
    EXPECT_EQ((*window)[0].module, "wctmon-wct-fixture.exe") << describe(*profile);
    EXPECT_GE((*window)[0].samples * 10, total(*window) * 9) << describe(*profile);
  }
  const auto verdict = judgeBusy(*profile);
  EXPECT_TRUE(verdict.spinning) << verdict.why_not;

  // Not left suspended, by us or anyone: it ran on, and runs still.
  EXPECT_EQ(suspendedThreads(), 0U);
  EXPECT_EQ(suspendCount(tid), 0U);
  const auto after = rounds(fx);
  std::this_thread::sleep_for(100ms);
  EXPECT_GT(after, before);
  EXPECT_GT(rounds(fx), after);
}

TEST(HotSpotSampler, AThreadWorkingThroughChangingDataIsNotTakenForASpinningOne) {
  WctFixture fx(L"work");
  ASSERT_EQ(fx.tids().size(), 1U);
  auto profile = SuspendingHotSpotSampler::profile(ref(fx.pid(), fx.tids()[0]), 1000ms, kNoStop);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  std::printf("%s\n", describe(*profile).c_str());
  const auto verdict = judgeBusy(*profile);
  EXPECT_FALSE(verdict.spinning) << describe(*profile);
  // Its functions are named: the six of the fixture are among the hottest.
  bool named = false;
  for (const auto& h : profile->first) named = named || h.function == "sortData";
  EXPECT_TRUE(named) << describe(*profile);
  EXPECT_EQ(suspendCount(fx.tids()[0]), 0U);
}

TEST(HotSpotSampler, AThreadThatExitsDuringItsProfileEndsItWithAnError) {
  WctFixture fx(L"spin-for 500");
  ASSERT_EQ(fx.tids().size(), 1U);
  auto profile = SuspendingHotSpotSampler::profile(ref(fx.pid(), fx.tids()[0]), 1000ms, kNoStop);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code, ErrorCode::kNoSuchThread) << profile.error().message;
  EXPECT_NE(profile.error().message.find("exited"), std::string::npos) << profile.error().message;
  EXPECT_EQ(suspendedThreads(), 0U);
  // Its process did not notice.
  EXPECT_EQ(fx.ask("ping"), "pong");
  // Gone before the profile begins: said at once.
  auto again = SuspendingHotSpotSampler::profile(ref(fx.pid(), fx.tids()[0]), 1000ms, kNoStop);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNoSuchThread) << again.error().message;
}

TEST(HotSpotSampler, ThreadsOfThisProcessAreNotSampled) {
  const auto self = ref(::GetCurrentProcessId(), ::GetCurrentThreadId());
  auto profile = SuspendingHotSpotSampler::profile(self, 100ms, kNoStop);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code, ErrorCode::kUnsupported);
}

TEST(HotSpotSampler, ProfilesAskedForRunOneAfterTheOtherOnTheSamplersThread) {
  WctFixture fx(L"spin");
  const auto spinning = ref(fx.pid(), fx.tids()[0]);
  const auto gone = ref(fx.pid(), 0xFFFFFFF0);
  std::vector<std::string> order;
  std::promise<void> both;
  std::thread::id worker;
  {
    SuspendingHotSpotSampler sampler;
    sampler.asyncProfile(spinning, 200ms, [&](Result<ThreadProfile> p) {
      worker = std::this_thread::get_id();
      order.push_back(p.ok() && !p->first.empty() ? p->first[0].function : p.error().message);
    });
    sampler.asyncProfile(gone, 200ms, [&](Result<ThreadProfile> p) {
      EXPECT_EQ(std::this_thread::get_id(), worker);
      order.push_back(p.ok() ? "profiled" : "error");
      both.set_value();
    });
    ASSERT_EQ(both.get_future().wait_for(20s), std::future_status::ready);
  }
  EXPECT_NE(worker, std::this_thread::get_id());
  EXPECT_EQ(order, (std::vector<std::string>{"wctmon_fixture_spin", "error"}));
}

TEST(HotSpotSampler, StoppingTheSamplerCancelsTheProfileUnderWayAndThoseWaiting) {
  WctFixture fx(L"spin");
  const auto spinning = ref(fx.pid(), fx.tids()[0]);
  std::vector<ErrorCode> codes;
  std::promise<void> started;
  const auto begun = std::chrono::steady_clock::now();
  {
    SuspendingHotSpotSampler sampler;
    for (int i = 0; i < 2; ++i) {
      sampler.asyncProfile(spinning, 10s, [&](Result<ThreadProfile> p) {
        codes.push_back(p.ok() ? ErrorCode::kInternal : p.error().code);
      });
    }
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begun, 5s);
  EXPECT_EQ(codes, (std::vector<ErrorCode>{ErrorCode::kCancelled, ErrorCode::kCancelled}));
  EXPECT_EQ(suspendCount(fx.tids()[0]), 0U);
}

TEST(ThreadCpuTime, GrowsForASpinningThreadOfAnotherProcessAndNotForAWaitingOne) {
  WctFixture spin(L"spin");
  WctFixture idle(L"idle 1");
  const DWORD spinning = spin.tids()[0];
  const DWORD waiting = idle.tids()[0];
  const auto spun = threadCpuTime(spinning);
  const auto waited = threadCpuTime(waiting);
  ASSERT_TRUE(spun.has_value());
  ASSERT_TRUE(waited.has_value());
  std::this_thread::sleep_for(1000ms);
  const auto spun_after = threadCpuTime(spinning);
  const auto waited_after = threadCpuTime(waiting);
  ASSERT_TRUE(spun_after.has_value());
  ASSERT_TRUE(waited_after.has_value());
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  std::printf("spinning: %lld ms -> %lld ms; waiting: %lld ms -> %lld ms\n",
              static_cast<long long>(ms(*spun)), static_cast<long long>(ms(*spun_after)),
              static_cast<long long>(ms(*waited)), static_cast<long long>(ms(*waited_after)));
  // A core for a second (2 cores here; a loaded machine may take some of it).
  EXPECT_GE(*spun_after - *spun, 500ms);
  EXPECT_LE(*spun_after - *spun, 1500ms);
  EXPECT_LT(*waited_after - *waited, 50ms);
  // The thread list reads them too, in the order of its threads.
  auto listed = listProcessThreads(Pid{static_cast<std::int32_t>(spin.pid())});
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->cpu_times.size(), listed->tids.size());
  bool found = false;
  for (std::size_t i = 0; i < listed->tids.size(); ++i) {
    if (listed->tids[i] != spinning) continue;
    found = true;
    ASSERT_TRUE(listed->cpu_times[i].has_value());
    EXPECT_GE(*listed->cpu_times[i], *spun_after);
  }
  EXPECT_TRUE(found);
  EXPECT_FALSE(threadCpuTime(DWORD{0xFFFFFFF0}).has_value()) << "no such thread: no time";
}

}  // namespace
}  // namespace wctmon::windows_platform
