// Whom the API's full listeners close to make room for a new connection: the oldest that has not
// spoken HTTP/2, else the one idle the longest once idle long enough, else nobody.
#include "api/connection_admission.h"

#include <gtest/gtest.h>

#include <vector>

namespace wctmon::api {
namespace {

using namespace std::chrono_literals;
using Action = ConnectionAdmission::Action;
using Decision = ConnectionAdmission::Decision;
using Open = ConnectionAdmission::OpenConnection;

const auto kNow = ConnectionAdmission::Clock::time_point{} + 1h;

TEST(ConnectionAdmission, BelowTheLimitEveryConnectionIsAdmitted) {
  const ConnectionAdmission rule(3, 3, 10s);
  const std::vector<Open> open{{false, kNow - 1h}, {true, kNow - 1h}};
  EXPECT_FALSE(rule.full(open.size()));
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kAdmit, 0}));
  EXPECT_EQ(rule.admit({}, kNow), (Decision{Action::kAdmit, 0}));
  EXPECT_TRUE(rule.full(3));
  EXPECT_TRUE(rule.full(4));
}

TEST(ConnectionAdmission, TheOldestThatHasNotSpokenHttp2GoesFirstHoweverBusy) {
  const ConnectionAdmission rule(4, 4, 10s);
  // Oldest first: one that spoke and is long idle, then two silent ones, one just active.
  const std::vector<Open> open{
      {true, kNow - 1h}, {false, kNow}, {false, kNow - 5s}, {true, kNow - 30s}};
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kCloseSilent, 1}));
}

TEST(ConnectionAdmission, WhenAllHaveSpokenTheLongestIdleGoesOnceIdleLongEnough) {
  const ConnectionAdmission rule(3, 3, 10s);
  std::vector<Open> open{{true, kNow - 20s}, {true, kNow - 40s}, {true, kNow - 1s}};
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kCloseIdle, 1}));
  // Of two idle as long, the older.
  open[0].last_active = kNow - 40s;
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kCloseIdle, 0}));
  // Idle exactly as long as allowed is long enough; a moment less is not.
  open = {{true, kNow - 10s}, {true, kNow - 2s}, {true, kNow}};
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kCloseIdle, 0}));
  open[0].last_active = kNow - 10s + 1ms;
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kRefuse, 0}));
}

TEST(ConnectionAdmission, BusyClientsAreNeverClosedForANewOne) {
  const ConnectionAdmission rule(2, 2, 10s);
  const std::vector<Open> open{{true, kNow - 9s}, {true, kNow}};
  EXPECT_EQ(rule.admit(open, kNow), (Decision{Action::kRefuse, 0}));
  // Past the limit (the limit lowered), the same.
  const ConnectionAdmission lower(1, 1, 10s);
  EXPECT_EQ(lower.admit(open, kNow), (Decision{Action::kRefuse, 0}));
  EXPECT_EQ(lower.admit(open, kNow + 20s), (Decision{Action::kCloseIdle, 0}));
}

// One peer (an address, or a local user) at its limit makes room among its own connections,
// or is refused: it never closes another's, however many are open.
TEST(ConnectionAdmission, APeerAtItsLimitMakesRoomAmongItsOwnOrIsRefused) {
  const ConnectionAdmission rule(10, 2, 10s);
  constexpr std::uint64_t kFlooder = 7;
  constexpr std::uint64_t kOther = 8;
  std::vector<Open> open{{false, kNow, kOther},
                         {true, kNow - 1h, kOther},
                         {true, kNow, kFlooder},
                         {false, kNow, kFlooder}};
  EXPECT_FALSE(rule.full(open.size(), 1));
  EXPECT_TRUE(rule.full(open.size(), 2));
  EXPECT_EQ(rule.admit(open, kNow, kOther), (Decision{Action::kCloseSilent, 0}));
  EXPECT_EQ(rule.admit(open, kNow, kFlooder), (Decision{Action::kCloseSilent, 3}));
  open[3].spoke = true;
  EXPECT_EQ(rule.admit(open, kNow, kFlooder), (Decision{Action::kRefuse, 0}));
  open[2].last_active = kNow - 1min;
  EXPECT_EQ(rule.admit(open, kNow, kFlooder), (Decision{Action::kCloseIdle, 2}));
  // A third peer has room: the listeners are not full.
  EXPECT_EQ(rule.admit(open, kNow, 9), (Decision{Action::kAdmit, 0}));
}

TEST(ConnectionAdmission, NoRoomAtAllIsARefusal) {
  const ConnectionAdmission none(0, 0, 10s);
  EXPECT_TRUE(none.full(0));
  EXPECT_EQ(none.admit({}, kNow), (Decision{Action::kRefuse, 0}));
}

}  // namespace
}  // namespace wctmon::api
