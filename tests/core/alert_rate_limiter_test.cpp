#include "core/alert_rate_limiter.h"

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

Alert alertFor(const std::string& target) {
  Alert a;
  a.target = target;
  return a;
}

TEST(AlertRateLimiter, AdmitsAtMostMaxPerWindowPerTarget) {
  FakeClock clock;
  AlertRateLimiter limiter(clock, 60s, 2);
  Alert a;
  a.target = "db";
  Alert b;
  b.target = "api";
  Alert service;
  EXPECT_TRUE(limiter.admit(a));
  EXPECT_TRUE(limiter.admit(a));
  EXPECT_FALSE(limiter.admit(a));
  EXPECT_TRUE(limiter.admit(b));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.admit(service));
  clock.advance(60s);
  EXPECT_TRUE(limiter.admit(a));
  EXPECT_EQ(limiter.suppressed(), 1U);
}

TEST(AlertRateLimiter, AWallClockStepBackDoesNotHoldTheWindowShut) {
  FakeClock clock;
  AlertRateLimiter limiter(clock, 60s, 1);
  EXPECT_TRUE(limiter.admit(alertFor("db")));
  EXPECT_FALSE(limiter.admit(alertFor("db")));
  clock.advance(30s);
  clock.stepWallClock(-1h);  // NTP sets the date back an hour: the window still ends in 30 s
  EXPECT_FALSE(limiter.admit(alertFor("db")));
  clock.advance(30s);
  EXPECT_TRUE(limiter.admit(alertFor("db")));
  EXPECT_EQ(limiter.suppressed(), 2U);
}

TEST(AlertRateLimiter, AWallClockStepForwardDoesNotEndTheWindowEarly) {
  FakeClock clock;
  AlertRateLimiter limiter(clock, 60s, 1);
  EXPECT_TRUE(limiter.admit(alertFor("db")));
  clock.advance(10s);
  clock.stepWallClock(1h);  // NTP sets the date forward an hour: 10 s of the window have passed
  EXPECT_FALSE(limiter.admit(alertFor("db")));
  clock.advance(49s);
  EXPECT_FALSE(limiter.admit(alertFor("db")));
  clock.advance(1s);
  EXPECT_TRUE(limiter.admit(alertFor("db")));
  // The service's own alerts are never held back.
  EXPECT_TRUE(limiter.admit(Alert{}));
  EXPECT_TRUE(limiter.admit(Alert{}));
}

}  // namespace
}  // namespace wctmon
