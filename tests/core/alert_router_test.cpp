// The alert router with sinks that take alerts, fail, or block: each sink gets every alert in
// order from a thread of its own, and one that blocks holds up no one else.
#include "core/alert_router.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wctmon {
namespace {

using namespace std::chrono_literals;

Alert alert(const std::string& message) {
  Alert a;
  a.message = message;
  return a;
}

/// Keeps what it is sent; blocks while closed; fails while failing.
class TestSink final : public AlertSink {
 public:
  explicit TestSink(bool open = true) : open_(open) {}

  Status send(const Alert& a) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return open_; });
    if (failing_) return makeError(ErrorCode::kIo, "the log is full");
    messages_.push_back(a.message);
    changed_.notify_all();
    return std::monostate{};
  }
  /// Kept as "resumed: MESSAGE".
  Status resume(const Alert& a) override {
    std::lock_guard lock(mutex_);
    messages_.push_back("resumed: " + a.message);
    changed_.notify_all();
    return std::monostate{};
  }

  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void fail() {
    std::lock_guard lock(mutex_);
    failing_ = true;
  }
  /// Waits until `n` alerts arrived (at most 10 s); what arrived.
  std::vector<std::string> await(std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [&] { return messages_.size() >= n; });
    return messages_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_;
  bool failing_ = false;
  std::vector<std::string> messages_;
};

const AlertRouter::SinkStats& statsOf(const std::vector<AlertRouter::SinkStats>& all,
                                      const std::string& name) {
  for (const auto& s : all) {
    if (s.name == name) return s;
  }
  throw std::runtime_error("no sink " + name);
}

TEST(AlertRouter, EverySinkGetsEveryAlertInOrder) {
  auto journal = std::make_shared<TestSink>();
  auto syslog = std::make_shared<TestSink>();
  AlertRouter router({{"journald", journal}, {"syslog", syslog}});
  for (const char* m : {"one", "two", "three"}) EXPECT_TRUE(router.send(alert(m)).ok());
  const std::vector<std::string> all{"one", "two", "three"};
  EXPECT_EQ(journal->await(3), all);
  EXPECT_EQ(syslog->await(3), all);
  EXPECT_TRUE(router.flush(10s));
  const auto stats = router.stats();
  EXPECT_EQ(statsOf(stats, "journald").delivered, 3U);
  EXPECT_EQ(statsOf(stats, "syslog").delivered, 3U);
  EXPECT_EQ(statsOf(stats, "syslog").queued, 0U);
}

TEST(AlertRouter, OpeningsResumedAtStartReachEachSinksResumeInOrderAndAreNoDelivery) {
  auto journal = std::make_shared<TestSink>();
  AlertRouter router({{"journald", journal}});
  EXPECT_TRUE(router.resume(alert("deadlock 1")).ok());
  EXPECT_TRUE(router.send(alert("service started")).ok());
  EXPECT_TRUE(router.resume(alert("deadlock 2")).ok());
  const std::vector<std::string> all{"resumed: deadlock 1", "service started",
                                     "resumed: deadlock 2"};
  EXPECT_EQ(journal->await(3), all);
  EXPECT_TRUE(router.flush(10s));
  const auto all_stats = router.stats();
  const auto& stats = statsOf(all_stats, "journald");
  EXPECT_EQ(stats.delivered, 1U);
  EXPECT_EQ(stats.failed, 0U);
}

TEST(AlertRouter, ASinkThatBlocksHoldsUpNeitherTheSenderNorTheOtherSinks) {
  auto stuck = std::make_shared<TestSink>(/*open=*/false);
  auto journal = std::make_shared<TestSink>();
  AlertRouter router({{"webhook", stuck}, {"journald", journal}});
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(router.send(alert(std::to_string(i))).ok());
  // Every alert reached the other sink while the stuck one still holds its first.
  EXPECT_EQ(journal->await(5).size(), 5U);
  EXPECT_FALSE(router.flush(50ms));
  EXPECT_EQ(statsOf(router.stats(), "webhook").queued, 4U);
  stuck->open();
  EXPECT_EQ(stuck->await(5).size(), 5U);
  EXPECT_TRUE(router.flush(10s));
}

TEST(AlertRouter, AFullQueueDropsItsOldestAndCountsThem) {
  auto stuck = std::make_shared<TestSink>(/*open=*/false);
  AlertRouter router({{"syslog", stuck, 2}});
  EXPECT_TRUE(router.send(alert("first")).ok());  // taken by the sink's thread, which blocks on it
  // Wait until the thread holds the first, so that the queue holds only what follows.
  for (int i = 0; i < 1000 && statsOf(router.stats(), "syslog").queued != 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  for (const char* m : {"a", "b", "c", "d"}) EXPECT_TRUE(router.send(alert(m)).ok());
  EXPECT_EQ(statsOf(router.stats(), "syslog").dropped, 2U);
  EXPECT_EQ(statsOf(router.stats(), "syslog").queued, 2U);
  stuck->open();
  EXPECT_EQ(stuck->await(3), (std::vector<std::string>{"first", "c", "d"}));
}

TEST(AlertRouter, FailuresAreCountedWithTheirReason) {
  auto full = std::make_shared<TestSink>();
  full->fail();
  AlertRouter router({{"eventlog", full}});
  EXPECT_TRUE(router.send(alert("x")).ok());
  EXPECT_TRUE(router.send(alert("y")).ok());
  ASSERT_TRUE(router.flush(10s));
  const auto stats = statsOf(router.stats(), "eventlog");
  EXPECT_EQ(stats.failed, 2U);
  EXPECT_EQ(stats.delivered, 0U);
  EXPECT_EQ(stats.last_error, "the log is full");
}

TEST(AlertRouter, ReplacedSinksDeliverWhatTheyHadAndTheNewOnesWhatFollows) {
  auto before = std::make_shared<TestSink>(/*open=*/false);
  auto after = std::make_shared<TestSink>();
  AlertRouter router({{"syslog", before}});
  EXPECT_TRUE(router.send(alert("old")).ok());
  router.replaceRoutes({{"journald", after}});
  EXPECT_TRUE(router.send(alert("new")).ok());
  EXPECT_EQ(after->await(1), std::vector<std::string>{"new"});
  before->open();
  EXPECT_EQ(before->await(1), std::vector<std::string>{"old"});
  EXPECT_TRUE(router.flush(10s));
  ASSERT_EQ(router.stats().size(), 1U);
  EXPECT_EQ(router.stats()[0].name, "journald");
}

TEST(AlertRouter, ARouterStopsWithinItsDrainTimeEvenWhenASinkNeverReturns) {
  auto stuck = std::make_shared<TestSink>(/*open=*/false);
  {
    AlertRouter router({{"webhook", stuck}});
    EXPECT_TRUE(router.send(alert("never")).ok());
    EXPECT_TRUE(router.send(alert("dropped")).ok());
  }
  // The sink's thread still holds the first alert; it ends once the sink returns.
  stuck->open();
  EXPECT_EQ(stuck->await(1), std::vector<std::string>{"never"});
}

/// Fails its first `failures` sends with `code`, then takes alerts; counts refreshes.
class FlakySink final : public AlertSink {
 public:
  FlakySink(int failures, ErrorCode code, std::chrono::milliseconds refresh_every = 0ms)
      : failures_(failures), code_(code), refresh_every_(refresh_every) {}

  Status send(const Alert& a) override {
    std::lock_guard lock(mutex_);
    ++attempts_;
    if (failures_ > 0) {
      --failures_;
      return makeError(code_, "receiver down");
    }
    messages_.push_back(a.message);
    return std::monostate{};
  }
  [[nodiscard]] std::chrono::milliseconds refreshInterval() const override {
    return refresh_every_;
  }
  Status refresh() override {
    std::lock_guard lock(mutex_);
    ++refreshes_;
    return std::monostate{};
  }
  int attempts() {
    std::lock_guard lock(mutex_);
    return attempts_;
  }
  int refreshes() {
    std::lock_guard lock(mutex_);
    return refreshes_;
  }
  std::vector<std::string> messages() {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  std::mutex mutex_;
  int failures_;
  ErrorCode code_;
  std::chrono::milliseconds refresh_every_;
  int attempts_ = 0;
  int refreshes_ = 0;
  std::vector<std::string> messages_;
};

TEST(AlertRouter, AnAlertAReceiverMayTakeLaterIsTriedAgainInOrder) {
  auto flaky = std::make_shared<FlakySink>(2, ErrorCode::kIo);
  AlertRouter router({{"webhook", flaky, 100, 60s}});
  EXPECT_TRUE(router.send(alert("first")).ok());
  EXPECT_TRUE(router.send(alert("second")).ok());
  // Two waits before the first goes: 500 ms, then 1 s.
  ASSERT_TRUE(router.flush(10s));
  EXPECT_EQ(flaky->messages(), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(flaky->attempts(), 4);
  const auto stats = statsOf(router.stats(), "webhook");
  EXPECT_EQ(stats.delivered, 2U);
  EXPECT_EQ(stats.failed, 0U);
  EXPECT_EQ(stats.retried, 2U);
}

TEST(AlertRouter, AnAlertTheReceiverRefusesIsNotTriedAgain) {
  auto refusing = std::make_shared<FlakySink>(1, ErrorCode::kInvalidArgument);
  AlertRouter router({{"alertmanager", refusing, 100, 60s}});
  EXPECT_TRUE(router.send(alert("bad")).ok());
  EXPECT_TRUE(router.send(alert("good")).ok());
  ASSERT_TRUE(router.flush(10s));
  EXPECT_EQ(refusing->attempts(), 2);
  EXPECT_EQ(refusing->messages(), std::vector<std::string>{"good"});
  const auto stats = statsOf(router.stats(), "alertmanager");
  EXPECT_EQ(stats.failed, 1U);
  EXPECT_EQ(stats.retried, 0U);
  EXPECT_EQ(stats.last_error, "receiver down");
}

TEST(AlertRouter, RetriesEndWhenTheRouteStopsAllowingThem) {
  // 500 ms + 1 s of waits fit in 1.2 s only once: tried twice, then failed.
  auto down = std::make_shared<FlakySink>(1000, ErrorCode::kIo);
  AlertRouter router({{"webhook", down, 100, 1200ms}});
  EXPECT_TRUE(router.send(alert("lost")).ok());
  ASSERT_TRUE(router.flush(10s));
  EXPECT_EQ(down->attempts(), 2);
  EXPECT_EQ(statsOf(router.stats(), "webhook").failed, 1U);
}

TEST(AlertRouter, ARouterThatStopsEndsItsRetriesAtOnce) {
  auto down = std::make_shared<FlakySink>(1000, ErrorCode::kIo);
  const auto start = std::chrono::steady_clock::now();
  {
    AlertRouter router({{"webhook", down, 100, 3600s}});
    EXPECT_TRUE(router.send(alert("never")).ok());
    while (down->attempts() == 0) std::this_thread::sleep_for(1ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, AlertRouter::kDrainTimeout);
  EXPECT_EQ(down->attempts(), 1);
}

TEST(AlertRouter, AnIdleSinkThatAsksForRefreshesGetsThem) {
  auto refreshed = std::make_shared<FlakySink>(0, ErrorCode::kIo, 20ms);
  auto plain = std::make_shared<FlakySink>(0, ErrorCode::kIo);
  AlertRouter router({{"alertmanager", refreshed}, {"journald", plain}});
  for (int i = 0; i < 2000 && refreshed->refreshes() < 3; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_GE(refreshed->refreshes(), 3);
  EXPECT_EQ(plain->refreshes(), 0);
}

}  // namespace
}  // namespace wctmon
