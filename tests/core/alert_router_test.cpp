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

}  // namespace
}  // namespace wctmon
