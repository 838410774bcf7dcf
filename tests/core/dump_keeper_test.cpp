// The service's dumps directory on its own, with a dumper that writes files of known sizes: the
// names, the total cap (the oldest go first, never one of an open incident), the record of a
// dump that could not be written, and retention.
#include "core/dump_keeper.h"

#include <gtest/gtest.h>

#include <fstream>

#include "fakes/fake_clock.h"
#include "fakes/fake_platform.h"
#include "os/sha256.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
constexpr std::uint64_t kMiB = 1024 * 1024;

Incident incident(std::int64_t id, int pid = 10) {
  Incident i;
  i.id = id;
  i.process = ProcessIdentity{Pid{pid}, 0};
  return i;
}

class DumpKeeperTest : public ::testing::Test {
 protected:
  DumpKeeper make(std::uint64_t max_mb, std::uint64_t total_mb) {
    Config::Capture limits;
    limits.dump_max_mb = max_mb;
    limits.dumps_max_total_mb = total_mb;
    return DumpKeeper({dumper_, dir_ / "dumps", clock_,
                       [](const Incident& i) { return "incident " + std::to_string(i.id); }},
                      limits);
  }
  std::vector<std::string> names(const DumpKeeper& keeper) const {
    std::vector<std::string> out;
    for (const auto& e : keeper.list()) out.push_back(e.path.filename().string());
    return out;
  }

  testing::TempDir dir_{"dumps"};
  testing::FakeProcessDumper dumper_;
  testing::FakeClock clock_;
};

TEST_F(DumpKeeperTest, AnIncidentsDumpIsNamedAfterItWithItsDiagnosisInsideAndBeside) {
  auto keeper = make(64, 1024);
  const auto record = keeper.dumpIncident(incident(7), {7});
  ASSERT_TRUE(record.error.empty()) << record.error;
  EXPECT_EQ(record.path, (dir_ / "dumps" / "incident-7-pid-10-20261122T000000Z.core").string());
  EXPECT_EQ(record.bytes, kMiB);
  EXPECT_EQ(record.format, "elf-core");
  EXPECT_EQ(record.method, "pid 10, all read");
  EXPECT_EQ(record.sha256.size(), 64U);
  EXPECT_EQ(fileSha256(record.path), record.sha256);
  ASSERT_EQ(dumper_.requests.size(), 1U);
  EXPECT_EQ(dumper_.requests[0].diagnosis, "incident 7");
  EXPECT_EQ(dumper_.requests[0].max_bytes, 64 * kMiB);
  std::ifstream sidecar(record.path + ".json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(sidecar), {}), "incident 7");
  // Only the service's account reads them.
  const auto perms = std::filesystem::status(dir_ / "dumps").permissions();
  EXPECT_EQ(perms, std::filesystem::perms::owner_all);
  EXPECT_EQ(std::filesystem::status(record.path + ".json").permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // Two in the same second are two files.
  const auto again = keeper.dumpProcess(Pid{10}, "now", {7});
  const auto third = keeper.dumpProcess(Pid{10}, "now", {7});
  ASSERT_TRUE(again.ok() && third.ok());
  EXPECT_EQ(again->path, (dir_ / "dumps" / "pid-10-20261122T000000Z.core").string());
  EXPECT_EQ(third->path, (dir_ / "dumps" / "pid-10-20261122T000000Z-2.core").string());
}

TEST_F(DumpKeeperTest, TheOldestGoFirstToMakeRoomButNeverTheDumpOfAnOpenIncident) {
  // Room for a dump: its cap (1 MiB) and 4 MiB of headers; 7 MiB in all: one 1 MiB dump fits
  // beside the next one's room, a third makes the oldest go.
  auto keeper = make(1, 7);
  for (std::int64_t id = 1; id <= 3; ++id) {
    const auto r = keeper.dumpIncident(incident(id), {1});
    ASSERT_TRUE(r.error.empty()) << id << ": " << r.error;
    clock_.advance(1s);
    // Files written in one second may carry one time: the order is made plain.
    std::filesystem::last_write_time(
        r.path, std::filesystem::file_time_type::clock::now() - std::chrono::minutes(10 - id));
  }
  // Incident 1 is open: its dump stays; 2 was the oldest of the others.
  EXPECT_EQ(names(keeper), (std::vector<std::string>{"incident-1-pid-10-20261122T000000Z.core",
                                                     "incident-3-pid-10-20261122T000002Z.core"}));
  EXPECT_FALSE(
      std::filesystem::exists(dir_ / "dumps" / "incident-2-pid-10-20261122T000001Z.core.json"));
}

TEST_F(DumpKeeperTest, WhenOnlyOpenIncidentsDumpsAreLeftTheNewOneIsCutOrRefusedWithTheReason) {
  dumper_.bytes = 3 * kMiB;
  auto keeper = make(4, 9);
  ASSERT_TRUE(keeper.dumpIncident(incident(1), {1, 2}).error.empty());
  // 3 MiB taken (and the diagnosis beside it), 6 MiB left: the next one may hold 2 MiB of
  // memory (4 go to its headers).
  const auto cut = keeper.dumpIncident(incident(2), {1, 2});
  ASSERT_TRUE(cut.error.empty()) << cut.error;
  const auto sidecar = std::string("incident 1").size();
  EXPECT_EQ(dumper_.requests.back().max_bytes, 2 * kMiB - sidecar);
  EXPECT_EQ(cut.bytes, 2 * kMiB - sidecar);
  // 5 MiB taken by open incidents: no room left for one more.
  const auto refused = keeper.dumpIncident(incident(3), {1, 2, 3});
  EXPECT_TRUE(refused.path.empty());
  EXPECT_EQ(refused.error, "the dumps in " + (dir_ / "dumps").string() +
                               " take 5 MiB of the 9 MiB capture.dumps_max_total_mb allows, and "
                               "those left are of open incidents");
  EXPECT_EQ(dumper_.requests.size(), 2U);  // the process was not even read
  EXPECT_EQ(keeper.list().size(), 2U);
}

TEST_F(DumpKeeperTest, ADumpCutShortByAKillIsDeletedBeforeTheNextOne) {
  std::filesystem::create_directories(dir_ / "dumps");
  std::ofstream(dir_ / "dumps" / "incident-3-pid-10-20261121T000000Z.core.partial") << "cut";
  auto keeper = make(64, 1024);
  ASSERT_TRUE(keeper.dumpIncident(incident(4), {4}).error.empty());
  EXPECT_FALSE(
      std::filesystem::exists(dir_ / "dumps" / "incident-3-pid-10-20261121T000000Z.core.partial"));
  EXPECT_EQ(names(keeper), std::vector<std::string>{"incident-4-pid-10-20261122T000000Z.core"});
}

TEST_F(DumpKeeperTest, ADumpThatCannotBeWrittenIsARecordThatSaysWhyAndLeavesNothing) {
  dumper_.fail = true;
  auto keeper = make(64, 1024);
  const auto record = keeper.dumpIncident(incident(4), {4});
  EXPECT_TRUE(record.path.empty());
  EXPECT_EQ(record.error, "No space left on device");
  EXPECT_TRUE(keeper.list().empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "dumps"));
}

TEST_F(DumpKeeperTest, RetentionDeletesTheDumpsOfIncidentsNoLongerKeptAndOldOnDemandOnes) {
  auto keeper = make(64, 1024);
  const auto kept = keeper.dumpIncident(incident(1), {});
  const auto gone = keeper.dumpIncident(incident(2), {});
  const auto fresh = keeper.dumpProcess(Pid{10}, "now", {});
  clock_.advance(1s);
  const auto old = keeper.dumpProcess(Pid{11}, "then", {});
  ASSERT_TRUE(fresh.ok() && old.ok());
  std::filesystem::last_write_time(
      old->path, std::filesystem::file_time_type::clock::now() - std::chrono::hours(48));
  EXPECT_EQ(keeper.applyRetention([](std::int64_t id) { return id == 1; }, 24h), 2U);
  EXPECT_TRUE(std::filesystem::exists(kept.path));
  EXPECT_FALSE(std::filesystem::exists(gone.path));
  EXPECT_FALSE(std::filesystem::exists(gone.path + ".json"));
  EXPECT_TRUE(std::filesystem::exists(fresh->path));
  EXPECT_FALSE(std::filesystem::exists(old->path));
  EXPECT_EQ(keeper.applyRetention([](std::int64_t) { return true; }, 24h), 0U);
}

}  // namespace
}  // namespace wctmon
