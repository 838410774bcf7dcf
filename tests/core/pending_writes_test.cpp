// The incident writes that wait for a store that cannot take them, with an in-memory repository.
#include "core/pending_writes.h"

#include <gtest/gtest.h>

#include "fakes/fake_incident_repository.h"

namespace wctmon {
namespace {

Incident incident(std::int64_t id, IncidentState state, const std::string& summary) {
  Incident i;
  i.id = id;
  i.state = state;
  i.summary = summary;
  return i;
}

const auto kIgnore = [](const Error&) {};

TEST(PendingWrites, KeepsOneEntryPerIncidentInTheOrderDecidedAndWritesTheLatestState) {
  testing::FakeIncidentRepository store;
  PendingWrites pending(10);
  store.failWrites(true);
  (void)pending.push(incident(1, IncidentState::kOpen, "a1"), true);
  (void)pending.push(incident(2, IncidentState::kOpen, "b1"), true);
  (void)pending.push(incident(1, IncidentState::kOpen, "a2"), false);
  (void)pending.push(incident(3, IncidentState::kOpen, "c1"), true);
  (void)pending.push(incident(1, IncidentState::kResolved, "a3"), false);
  EXPECT_EQ(pending.size(), 3U);
  const auto failed = pending.flush(store, kIgnore);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "incidents.db: disk I/O error");
  EXPECT_EQ(pending.size(), 3U);  // nothing written, nothing lost
  store.failWrites(false);
  ASSERT_TRUE(pending.flush(store, kIgnore).ok());
  EXPECT_TRUE(pending.empty());
  // One write each, in the order they were first decided; 1 inserted whole in its last state.
  EXPECT_EQ(store.writes(), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(store.get(1)->value().summary, "a3");
  EXPECT_EQ(store.get(1)->value().state, IncidentState::kResolved);
}

TEST(PendingWrites, AWriteDoneTwiceIsNeverASecondRowAndAnUpdateOfAMissingRowInsertsIt) {
  testing::FakeIncidentRepository store;
  ASSERT_TRUE(store.insert(incident(1, IncidentState::kOpen, "reached the disk")).ok());
  PendingWrites pending(10);
  (void)pending.push(incident(1, IncidentState::kResolved, "again"), true);  // insert: it exists
  (void)pending.push(incident(2, IncidentState::kResolved, "new"), false);   // update: it does not
  ASSERT_TRUE(pending.flush(store, kIgnore).ok());
  EXPECT_EQ(store.list({})->incidents.size(), 2U);
  EXPECT_EQ(store.get(1)->value().summary, "again");
  EXPECT_EQ(store.get(2)->value().summary, "new");
}

TEST(PendingWrites, WhenFullTheOldestResolvedIncidentIsDroppedThenTheOldest) {
  PendingWrites pending(3);
  EXPECT_EQ(pending.push(incident(1, IncidentState::kOpen, ""), true), std::nullopt);
  EXPECT_EQ(pending.push(incident(2, IncidentState::kResolved, ""), true), std::nullopt);
  EXPECT_EQ(pending.push(incident(3, IncidentState::kResolved, ""), true), std::nullopt);
  EXPECT_EQ(pending.push(incident(4, IncidentState::kOpen, ""), true),
            std::optional<std::int64_t>(2));
  EXPECT_EQ(pending.push(incident(5, IncidentState::kOpen, ""), true),
            std::optional<std::int64_t>(3));
  EXPECT_EQ(pending.push(incident(6, IncidentState::kOpen, ""), true),
            std::optional<std::int64_t>(1));
  // A newer state of a queued incident takes no room.
  EXPECT_EQ(pending.push(incident(5, IncidentState::kResolved, ""), false), std::nullopt);
  EXPECT_EQ(pending.size(), 3U);
  EXPECT_EQ(pending.dropped(), 3U);
  testing::FakeIncidentRepository store;
  ASSERT_TRUE(pending.flush(store, kIgnore).ok());
  EXPECT_EQ(store.writes(), (std::vector<std::int64_t>{4, 5, 6}));
}

/// A store that refuses one incident's record for good (not the disk: the record).
class RefusingRepository final : public IncidentRepository {
 public:
  Result<std::int64_t> insert(const Incident& i) override {
    if (i.id == 2) return makeError(ErrorCode::kInvalidArgument, "CHECK constraint failed");
    return inner.insert(i);
  }
  Status update(const Incident& i) override {
    if (i.id == 2) return makeError(ErrorCode::kInvalidArgument, "there is none");
    return inner.update(i);
  }
  Result<std::int64_t> lastId() override { return inner.lastId(); }
  Result<IncidentListing> list(const IncidentQuery& q) override { return inner.list(q); }
  Result<std::optional<Incident>> get(std::int64_t id) override { return inner.get(id); }
  Result<std::size_t> applyRetention(std::chrono::system_clock::time_point now,
                                     std::chrono::hours age, std::size_t count) override {
    return inner.applyRetention(now, age, count);
  }
  Status keepIdsAbove(std::int64_t id) override { return inner.keepIdsAbove(id); }
  Status putTarget(const TargetConfig& t) override { return inner.putTarget(t); }
  Result<bool> removeTarget(const std::string& n) override { return inner.removeTarget(n); }
  Result<std::vector<TargetConfig>> targets(const Config& c) override { return inner.targets(c); }
  testing::FakeIncidentRepository inner;
};

TEST(PendingWrites, ARecordTheStoreRefusesIsReportedAndDroppedNotRetriedForEver) {
  RefusingRepository store;
  PendingWrites pending(10);
  for (std::int64_t id = 1; id <= 3; ++id)
    (void)pending.push(incident(id, IncidentState::kOpen, ""), true);
  std::vector<std::string> refused;
  ASSERT_TRUE(pending.flush(store, [&](const Error& e) { refused.push_back(e.message); }).ok());
  EXPECT_EQ(refused, std::vector<std::string>{"there is none"});
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(store.inner.writes(), (std::vector<std::int64_t>{1, 3}));
}

}  // namespace
}  // namespace wctmon
