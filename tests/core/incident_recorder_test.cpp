// The recorder on its own: incident changes into a store that fails, comes back and is deleted,
// and onto the feed, in the order they came.
#include "core/incident_recorder.h"

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"
#include "fakes/fake_incident_repository.h"
#include "fakes/fake_platform.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;

class IncidentRecorderTest : public ::testing::Test {
 protected:
  std::vector<TargetConfig> runtime_targets_;
  testing::FakeClock clock_;
  testing::FakeIncidentRepository store_;
  testing::FakeAlertSink alerts_;
  IncidentRecorder recorder_{{&store_, &alerts_, clock_, [this] { return runtime_targets_; }}};

  static Incident incident(std::int64_t id, IncidentState state = IncidentState::kOpen) {
    Incident i;
    i.id = id;
    i.state = state;
    i.summary = "deadlock " + std::to_string(id);
    return i;
  }
  std::vector<AlertKind> alertKinds() const {
    std::vector<AlertKind> out;
    for (const auto& a : alerts_.sent) out.push_back(a.kind);
    return out;
  }
};

TEST_F(IncidentRecorderTest, ChangesReachTheStoreAndThenTheFeedInTheirOrder) {
  std::vector<std::pair<IncidentEvent::Type, std::int64_t>> seen;
  auto subscription =
      recorder_.feed().subscribe([](const auto&) {},
                                 [&](const auto& event) {
                                   // Stored before it is told.
                                   EXPECT_TRUE(store_.get(event->incident.id)->has_value());
                                   seen.emplace_back(event->type, event->incident.id);
                                 });
  recorder_.record(incident(1), IncidentEvent::Type::kOpened);
  recorder_.record(incident(2), IncidentEvent::Type::kOpened);
  recorder_.record(incident(1, IncidentState::kResolved), IncidentEvent::Type::kResolved);
  EXPECT_EQ(seen, (std::vector<std::pair<IncidentEvent::Type, std::int64_t>>{
                      {IncidentEvent::Type::kOpened, 1},
                      {IncidentEvent::Type::kOpened, 2},
                      {IncidentEvent::Type::kResolved, 1}}));
  EXPECT_EQ(store_.get(1)->value().state, IncidentState::kResolved);
  EXPECT_TRUE(alerts_.sent.empty());
}

TEST_F(IncidentRecorderTest, AChangeDecidedBeforeTheCaptureCameBackKeepsTheEvidenceEverywhere) {
  std::vector<std::size_t> told;
  auto subscription = recorder_.feed().subscribe(
      [](const auto&) {},
      [&](const auto& event) { told.push_back(event->incident.evidence.size()); });
  recorder_.record(incident(1), IncidentEvent::Type::kOpened);
  auto captured = incident(1);
  captured.evidence.resize(2);
  recorder_.record(captured, IncidentEvent::Type::kUpdated);
  // Decided from the tracker's copy, which carries no evidence.
  const auto updated = recorder_.record(incident(1), IncidentEvent::Type::kUpdated);
  EXPECT_EQ(updated.evidence.size(), 2U);
  EXPECT_EQ(store_.get(1)->value().evidence.size(), 2U);
  const auto resolved =
      recorder_.record(incident(1, IncidentState::kResolved), IncidentEvent::Type::kResolved);
  EXPECT_EQ(resolved.evidence.size(), 2U);
  EXPECT_EQ(told, (std::vector<std::size_t>{0, 2, 2, 2}));
  // Forgotten once resolved: an id is never given twice, and nothing is kept for it.
  EXPECT_TRUE(recorder_.record(incident(1), IncidentEvent::Type::kUpdated).evidence.empty());
}

TEST_F(IncidentRecorderTest, AFailingStoreIsSaidOnceRetriedOnceASecondAndWrittenWhenItRecovers) {
  store_.failWrites(true);
  recorder_.record(incident(1), IncidentEvent::Type::kOpened);
  for (int i = 0; i < 10; ++i) {
    clock_.advance(100ms);
    recorder_.checkStore();
  }
  EXPECT_EQ(alertKinds(), std::vector<AlertKind>{AlertKind::kStoreFault});
  EXPECT_EQ(recorder_.counters().store_errors, 2U);  // at 0 and after 1 s
  EXPECT_EQ(recorder_.counters().pending_writes, 1U);
  store_.failWrites(false);
  clock_.advance(1s);
  recorder_.checkStore();
  EXPECT_TRUE(store_.get(1)->has_value());
  EXPECT_EQ(recorder_.counters().pending_writes, 0U);
  EXPECT_EQ(alertKinds(),
            (std::vector<AlertKind>{AlertKind::kStoreFault, AlertKind::kStoreRecovered}));
}

TEST_F(IncidentRecorderTest, AStoreDeletedIsMadeAgainWithWhatIsLive) {
  recorder_.record(incident(1), IncidentEvent::Type::kOpened);
  auto captured = incident(2);
  captured.evidence.resize(1);
  recorder_.record(captured, IncidentEvent::Type::kOpened);
  recorder_.record(incident(1, IncidentState::kResolved), IncidentEvent::Type::kResolved);
  TargetConfig db;
  db.name = "db";
  db.exe = "postgres";
  runtime_targets_ = {db};
  store_.deleteFile();
  recorder_.checkStore();
  EXPECT_FALSE(store_.get(1)->has_value()) << "resolved or not, it was in the file that went";
  ASSERT_TRUE(store_.get(2)->has_value());
  EXPECT_EQ(store_.get(2)->value().evidence.size(), 1U) << "with its evidence";
  ASSERT_EQ(store_.targets(Config{})->size(), 1U);
  EXPECT_EQ(store_.lastId().value(), 2);
  EXPECT_EQ(alertKinds(), std::vector<AlertKind>{AlertKind::kStoreFault});
}

TEST_F(IncidentRecorderTest, TheOpenIncidentsAreTheRecordedOnesWithTheirEvidence) {
  recorder_.record(incident(1), IncidentEvent::Type::kOpened);
  recorder_.record(incident(2), IncidentEvent::Type::kOpened);
  auto captured = incident(2);
  captured.evidence.resize(3);
  recorder_.record(captured, IncidentEvent::Type::kUpdated);
  recorder_.record(incident(1, IncidentState::kResolved), IncidentEvent::Type::kResolved);
  const auto open = recorder_.feed().openIncidents();
  ASSERT_EQ(open->size(), 1U);
  EXPECT_EQ((*open)[0].id, 2);
  EXPECT_EQ((*open)[0].evidence.size(), 3U);
  EXPECT_EQ(recorder_.lastId(), 2);
}

TEST_F(IncidentRecorderTest, IdsStayAboveTheHighestTheStoreEverGave) {
  ASSERT_TRUE(store_.keepIdsAbove(40));
  IncidentRecorder recorder({&store_, &alerts_, clock_, {}});
  EXPECT_EQ(recorder.lastId(), 40);
  recorder.record(incident(41), IncidentEvent::Type::kOpened);
  EXPECT_EQ(recorder.lastId(), 41);
}

}  // namespace
}  // namespace wctmon
