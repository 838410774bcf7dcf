#include "core/hung_window_tracker.h"

#include <gtest/gtest.h>

#include <vector>

#include "fakes/fake_clock.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

WindowReading window(std::uint64_t handle, bool responding, std::int32_t pid = 70,
                     std::int32_t tid = 71, std::string title = "Editor") {
  WindowReading w;
  w.handle = handle;
  w.pid = Pid{pid};
  w.tid = Tid{tid};
  w.title = std::move(title);
  w.responding = responding;
  return w;
}

class HungWindowTrackerTest : public ::testing::Test {
 protected:
  FakeClock clock;
  HungWindowTracker tracker{clock};
  std::vector<WindowOwner> owners{{Pid{70}, "editors"}, {Pid{80}, "viewers"}};

  std::vector<Symptom> feed(const std::vector<WindowReading>& readings,
                            std::chrono::milliseconds threshold = 5s) {
    return tracker.update(readings, owners, threshold);
  }
};

TEST_F(HungWindowTrackerTest, SilenceCountsFromTheStartOfTheProbeThatFoundIt) {
  // The probe began 1 s before its readings came back: the window has not answered since then.
  const auto began = clock.steadyNow();
  clock.advance(1s);
  EXPECT_TRUE(tracker.update({{window(0x1a2b4, false)}}, owners, 5s, began).empty());
  clock.advance(4s);
  auto symptoms = tracker.update({{window(0x1a2b4, false)}}, owners, 5s, clock.steadyNow());
  ASSERT_EQ(symptoms.size(), 1U);
  EXPECT_EQ(symptoms[0].summary,
            "window 0x1a2b4 \"Editor\" of thread 71 has not answered messages for 5s");
}

TEST_F(HungWindowTrackerTest, AWindowSilentForTheThresholdIsHungUntilItAnswers) {
  EXPECT_TRUE(feed({window(0x1a2b4, false)}).empty());
  clock.advance(4999ms);
  EXPECT_TRUE(feed({window(0x1a2b4, false)}).empty());
  clock.advance(1ms);
  auto symptoms = feed({window(0x1a2b4, false)});
  ASSERT_EQ(symptoms.size(), 1U);
  const Symptom& s = symptoms.front();
  EXPECT_EQ(s.kind, IncidentKind::kWindowHung);
  EXPECT_EQ(s.pid, Pid{70});
  EXPECT_EQ(s.target, "editors");
  EXPECT_EQ(s.key, "window 0x1a2b4");
  EXPECT_EQ(s.threads, std::vector<Tid>{Tid{71}});
  EXPECT_EQ(s.summary, "window 0x1a2b4 \"Editor\" of thread 71 has not answered messages for 5s");
  clock.advance(1s);
  EXPECT_EQ(feed({window(0x1a2b4, false)}).size(), 1U);  // level-triggered
  // It answers: no longer hung, and a new silence starts from nothing.
  EXPECT_TRUE(feed({window(0x1a2b4, true)}).empty());
  EXPECT_TRUE(feed({window(0x1a2b4, false)}).empty());
  clock.advance(4s);
  EXPECT_TRUE(feed({window(0x1a2b4, false)}).empty());
}

TEST_F(HungWindowTrackerTest, OneAnswerInBetweenRestartsTheWait) {
  (void)feed({window(0x10, false)});
  clock.advance(3s);
  (void)feed({window(0x10, true)});
  clock.advance(3s);
  EXPECT_TRUE(feed({window(0x10, false)}).empty()) << "silent 6 s, but not continuously";
}

TEST_F(HungWindowTrackerTest, APumpingWindowIsNeverReported) {
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(feed({window(0x10, true)}).empty());
    clock.advance(1s);
  }
}

TEST_F(HungWindowTrackerTest, WindowsOfProcessesNotWatchedAreIgnored) {
  const std::vector readings{window(0x10, false, 70, 71), window(0x20, false, 99, 991),
                             window(0x30, false, 80, 81, "")};
  (void)feed(readings);
  clock.advance(6s);
  auto symptoms = feed(readings);
  ASSERT_EQ(symptoms.size(), 2U);
  EXPECT_EQ(symptoms[0].key, "window 0x10");
  EXPECT_EQ(symptoms[1].key, "window 0x30");
  EXPECT_EQ(symptoms[1].target, "viewers");
  EXPECT_EQ(symptoms[1].summary, "window 0x30 of thread 81 has not answered messages for 6s");
  // Its process no longer watched: forgotten, and watched again it starts afresh.
  owners.pop_back();
  EXPECT_EQ(feed(readings).size(), 1U);
  owners.push_back({Pid{80}, "viewers"});
  EXPECT_EQ(feed(readings).size(), 1U);
}

TEST_F(HungWindowTrackerTest, AGoneWindowIsForgottenAndAReusedHandleIsAnotherWindow) {
  (void)feed({window(0x10, false)});
  clock.advance(6s);
  ASSERT_EQ(feed({window(0x10, false)}).size(), 1U);
  EXPECT_TRUE(feed({}).empty());
  EXPECT_TRUE(feed({window(0x10, false)}).empty());
  clock.advance(6s);
  ASSERT_EQ(feed({window(0x10, false)}).size(), 1U);
  // The handle now names another thread's window: its silence starts now.
  EXPECT_TRUE(feed({window(0x10, false, 70, 72)}).empty());
}

TEST_F(HungWindowTrackerTest, TheThresholdIsTheCallersAndEachWindowIsJudgedAlone) {
  (void)feed({window(0x10, false), window(0x11, true)});
  clock.advance(2s);
  auto symptoms = feed({window(0x10, false), window(0x11, false)}, 2s);
  ASSERT_EQ(symptoms.size(), 1U);
  EXPECT_EQ(symptoms.front().key, "window 0x10");
  clock.advance(2s);
  EXPECT_EQ(feed({window(0x10, false), window(0x11, false)}, 2s).size(), 2U);
}

}  // namespace
}  // namespace wctmon
