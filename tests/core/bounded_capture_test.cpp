#include "core/bounded_capture.h"

#include <gtest/gtest.h>

#include "core/snapshot_builder.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_wait_chain_source.h"

namespace wctmon {
namespace {

using testing::T;

std::vector<ThreadRef> ring(int n) {
  std::vector<ThreadRef> out;
  for (int i = 0; i < n; ++i) out.push_back(T(10, 100 + i));
  return out;
}

TEST(BoundedCapture, TakesTheFirstThreadsAndNamesTheRest) {
  testing::FakeThreadInspector inspector;
  testing::FakeClock clock;
  const auto threads = ring(100);
  const auto out = captureBounded(inspector, threads, clock, {.max_threads = 10});
  ASSERT_EQ(out.size(), 100U);
  EXPECT_EQ(inspector.requested.size(), 10U);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].thread, threads[i]);
    EXPECT_EQ(out[i].captured, i < 10) << i;
  }
  EXPECT_EQ(out[10].error, "not captured: the evidence is taken from the first 10 threads");
}

/// Each capture takes a second of the fake clock.
class SlowInspector final : public ThreadInspector {
 public:
  explicit SlowInspector(testing::FakeClock& clock) : clock_(clock) {}
  std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) override {
    std::vector<ThreadCapture> out;
    for (const auto& t : threads) {
      clock_.advance(std::chrono::seconds(1));
      ThreadCapture c;
      c.thread = t;
      c.captured = true;
      out.push_back(std::move(c));
      ++taken;
    }
    return out;
  }
  int taken = 0;

 private:
  testing::FakeClock& clock_;
};

TEST(BoundedCapture, StopsWhenItsTimeBudgetIsSpent) {
  testing::FakeClock clock;
  SlowInspector inspector(clock);
  const auto threads = ring(40);
  const auto out = captureBounded(inspector, threads, clock,
                                  {.max_threads = 32, .budget = std::chrono::seconds(10)});
  ASSERT_EQ(out.size(), 40U);
  // Checked between calls of a few threads: the call that crosses the budget is the last.
  EXPECT_EQ(inspector.taken, 12);
  EXPECT_TRUE(out[11].captured);
  EXPECT_FALSE(out[12].captured);
  EXPECT_EQ(out[12].error,
            "not captured: the capture's time budget (10 s) was spent on the threads before it");
  EXPECT_EQ(out[32].error, "not captured: the evidence is taken from the first 32 threads");
}

TEST(BoundedCapture, NothingToCaptureIsNoCall) {
  testing::FakeThreadInspector inspector;
  testing::FakeClock clock;
  EXPECT_TRUE(captureBounded(inspector, {}, clock).empty());
  EXPECT_TRUE(inspector.requested.empty());
}

}  // namespace
}  // namespace wctmon
