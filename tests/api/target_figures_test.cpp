// What the metrics report of each target: its open incidents by kind with the oldest's start,
// and what it watches, for every configured target and for those only open incidents name.
#include "api/target_figures.h"

#include <gtest/gtest.h>

namespace wctmon::api {
namespace {

using Clock = std::chrono::system_clock;

Incident incident(std::string target, IncidentKind kind, Clock::time_point opened_at) {
  Incident i;
  i.target = std::move(target);
  i.kind = kind;
  i.opened_at = opened_at;
  return i;
}

TEST(TargetFigures, EachTargetCountsItsOpenIncidentsByKindAndKeepsTheOldestStart) {
  const Clock::time_point t0{std::chrono::seconds(1'767'225'600)};
  const auto deadlock = static_cast<std::size_t>(IncidentKind::kDeadlock);
  const auto hang = static_cast<std::size_t>(IncidentKind::kHang);
  const auto figures = targetFigures(
      {{"api", 2}, {"db", 1}, {"idle", 0}},
      {incident("db", IncidentKind::kDeadlock, t0 + std::chrono::seconds(30)),
       incident("db", IncidentKind::kDeadlock, t0 + std::chrono::seconds(10)),
       incident("db", IncidentKind::kHang, t0 + std::chrono::seconds(20)),
       incident("api", IncidentKind::kHang, t0 + std::chrono::seconds(5)),
       // The SCM's watcher reports for a target of its own; a removed target's incident stays.
       incident("services", IncidentKind::kServiceHung, t0)});

  ASSERT_EQ(figures.size(), 4U);
  EXPECT_EQ(figures[0].target, "api");
  EXPECT_EQ(figures[0].watched, 2U);
  EXPECT_EQ(figures[0].open[hang], 1U);
  EXPECT_EQ(figures[0].open[deadlock], 0U);
  EXPECT_EQ(figures[0].oldest[hang], t0 + std::chrono::seconds(5));
  EXPECT_FALSE(figures[0].oldest[deadlock]);

  EXPECT_EQ(figures[1].target, "db");
  EXPECT_EQ(figures[1].watched, 1U);
  EXPECT_EQ(figures[1].open[deadlock], 2U);
  EXPECT_EQ(figures[1].oldest[deadlock], t0 + std::chrono::seconds(10));
  EXPECT_EQ(figures[1].open[hang], 1U);
  EXPECT_EQ(figures[1].oldest[hang], t0 + std::chrono::seconds(20));

  // A target with nothing open is there all the same, all zeros.
  EXPECT_EQ(figures[2].target, "idle");
  EXPECT_EQ(figures[2].watched, 0U);
  for (std::size_t k = 0; k < kIncidentKindCount; ++k) {
    EXPECT_EQ(figures[2].open[k], 0U);
    EXPECT_FALSE(figures[2].oldest[k]);
  }

  EXPECT_EQ(figures[3].target, "services");
  EXPECT_EQ(figures[3].watched, 0U);
  EXPECT_EQ(figures[3].open[static_cast<std::size_t>(IncidentKind::kServiceHung)], 1U);
}

TEST(TargetFigures, NoTargetAndNothingOpenIsNoFigures) {
  EXPECT_TRUE(targetFigures({}, {}).empty());
}

}  // namespace
}  // namespace wctmon::api
