// The incident store on real SQLite files.
#include "store/incident_store.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "support/temp_dir.h"
#include "wire/json_writer.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;

/// A state directory of its own for each test.
class StateDir : public testing::TempDir {
 public:
  StateDir() : TempDir("store") {}
  [[nodiscard]] std::filesystem::path file() const { return *this / "incidents.db"; }
};

const auto kT0 = std::chrono::system_clock::time_point(std::chrono::seconds(1795000000));

/// Runs `sql` on `file` through a connection of its own; SQLite's error, or "".
std::string execSql(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(file.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot open " + file.string();
  }
  char* error = nullptr;
  std::string out;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    out = error != nullptr ? error : "failed";
  }
  sqlite3_free(error);
  sqlite3_close(db);
  return out;
}

/// The first column of every row `sql` gives on `file`, as text.
std::vector<std::string> querySql(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  if (sqlite3_open(file.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
      while (sqlite3_step(s) == SQLITE_ROW) {
        const auto* text = sqlite3_column_text(s, 0);
        out.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "NULL");
      }
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

/// "VERSION: every detail in binary" when the file is at a schema version whose incidents keep
/// their detail as binary blobs (and no JSON column is left); what it is otherwise.
std::string fileSchema(const std::filesystem::path& file) {
  const auto version = querySql(file, "SELECT version FROM schema_version");
  const auto columns = querySql(file, "SELECT name FROM pragma_table_info('incidents')");
  const auto types = querySql(file, "SELECT DISTINCT typeof(detail) FROM incidents");
  std::string out = version.empty() ? "no version" : version[0];
  for (const char* json : {"chains", "evidence", "processes"}) {
    if (std::find(columns.begin(), columns.end(), json) != columns.end()) {
      out += std::string(" with column ") + json;
    }
  }
  if (std::find(columns.begin(), columns.end(), "detail") == columns.end()) {
    return out + " without column detail";
  }
  if (types.empty() || types == std::vector<std::string>{"blob"}) {
    return out + ": every detail in binary";
  }
  for (const auto& t : types) out += " " + t;
  return out;
}

Incident makeIncident(int pid, IncidentState state, std::chrono::system_clock::time_point opened) {
  Incident i;
  i.kind = pid % 2 == 0 ? IncidentKind::kDeadlock : IncidentKind::kHang;
  i.state = state;
  i.process = ProcessIdentity{Pid{pid}, 1000U + static_cast<unsigned>(pid)};
  i.process_name = "proc" + std::to_string(pid);
  i.target = "t";
  i.signature = "deadlock [" + std::to_string(pid) + ":1]";
  i.threads = {ThreadRef{Pid{pid}, Tid{pid + 1}}, ThreadRef{Pid{pid}, Tid{pid + 2}}};
  i.spurs = {ThreadRef{Pid{pid}, Tid{pid}}};
  i.opened_at = opened;
  i.updated_at = opened + 1s;
  if (state == IncidentState::kResolved) {
    i.resolved_at = opened + 2s;
    i.resolution = "the cycle is gone";
  }
  i.summary = "summary";
  WaitChain chain;
  chain.start = i.threads[0];
  WaitNode node;
  node.type = ObjectType::kThread;
  node.status = ObjectStatus::kBlocked;
  node.thread = i.threads[0];
  node.thread_name = "worker";
  node.wait_time = 1500ms;
  chain.nodes.push_back(node);
  chain.node_count = 1;
  i.chains.push_back(chain);
  ThreadCapture capture;
  capture.thread = i.threads[0];
  capture.captured = true;
  capture.architecture = "x86_64";
  capture.registers = {{"rip", 0x401000}};
  capture.frames = {{0x401000, "main", "/bin/x", 4}};
  capture.stop_time = 40us;
  i.evidence.push_back(capture);
  return i;
}

void expectSame(const Incident& a, const Incident& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.process, b.process);
  EXPECT_EQ(a.process_name, b.process_name);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.signature, b.signature);
  EXPECT_EQ(a.summary, b.summary);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.spurs, b.spurs);
  EXPECT_EQ(a.opened_at, b.opened_at);
  EXPECT_EQ(a.updated_at, b.updated_at);
  EXPECT_EQ(a.resolved_at, b.resolved_at);
  EXPECT_EQ(a.resolution, b.resolution);
  EXPECT_EQ(a.chains, b.chains);
  EXPECT_EQ(a.evidence, b.evidence);
}

TEST(IncidentStore, StoresReadsAndUpdatesIncidents) {
  StateDir dir;
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), IncidentStore::kSchemaVersion);
  auto incident = makeIncident(10, IncidentState::kOpen, kT0);
  auto id = (*store)->insert(incident);
  ASSERT_TRUE(id.ok()) << id.error().message;
  incident.id = *id;
  auto got = (*store)->get(*id);
  ASSERT_TRUE(got.ok() && got->has_value());
  expectSame(**got, incident);

  incident.state = IncidentState::kResolved;
  incident.resolved_at = kT0 + 5s;
  incident.resolution = "the process exited";
  ASSERT_TRUE((*store)->update(incident).ok());
  got = (*store)->get(*id);
  expectSame(**got, incident);

  Incident missing = incident;
  missing.id = 999;
  EXPECT_FALSE((*store)->update(missing).ok());
  EXPECT_FALSE((*store)->get(999)->has_value());
}

TEST(IncidentStore, ListsNewestFirstWithFilters) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        store
            ->insert(makeIncident(i, i % 3 == 0 ? IncidentState::kOpen : IncidentState::kResolved,
                                  kT0 + std::chrono::seconds(i)))
            .ok());
  }
  const auto all = store->list({})->incidents;
  ASSERT_EQ(all.size(), 6U);
  EXPECT_EQ(all[0].process.pid, Pid{5});
  EXPECT_EQ(store->list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents.size(), 2U);
  EXPECT_EQ(store->list(IncidentQuery::by(IncidentState::kResolved, {}, 3))->incidents.size(), 3U);
  const auto one =
      store->list(IncidentQuery::by(std::nullopt, ProcessIdentity{Pid{4}, 1004}))->incidents;
  ASSERT_EQ(one.size(), 1U);
  EXPECT_EQ(one[0].process_name, "proc4");
}

// Listed by opening time, an incident opened before the wall clock was set back an hour stayed
// on top of every page and hid the ones opened since.
TEST(IncidentStore, ListsInTheOrderIncidentsWereMadeWhateverTheWallClockSaid) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(store->insert(makeIncident(1, IncidentState::kOpen, kT0 + 1h)).ok());
  ASSERT_TRUE(store->insert(makeIncident(2, IncidentState::kOpen, kT0)).ok());
  ASSERT_TRUE(store->insert(makeIncident(3, IncidentState::kOpen, kT0 + 1s)).ok());
  IncidentQuery first;
  first.limit = 2;
  const auto page = store->list(first)->incidents;
  ASSERT_EQ(page.size(), 2U);
  EXPECT_EQ(page[0].process.pid, Pid{3});
  EXPECT_EQ(page[1].process.pid, Pid{2});
  IncidentQuery next;
  next.after = IncidentQuery::Position{page[1].opened_at, page[1].id};
  const auto rest = store->list(next)->incidents;
  ASSERT_EQ(rest.size(), 1U);
  EXPECT_EQ(rest[0].process.pid, Pid{1});
}

TEST(IncidentStore, ADeadlockAcrossProcessesIsListedByAnyOfItsPids) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  auto across = makeIncident(40, IncidentState::kOpen, kT0);
  across.threads = {ThreadRef{Pid{40}, Tid{41}}, ThreadRef{Pid{500}, Tid{500}}};
  ASSERT_TRUE(store->insert(across).ok());
  ASSERT_TRUE(store->insert(makeIncident(5, IncidentState::kOpen, kT0)).ok());
  IncidentQuery q;
  for (const int pid : {40, 500}) {
    q.pid = Pid{pid};
    const auto found = store->list(q)->incidents;
    ASSERT_EQ(found.size(), 1U) << pid;
    EXPECT_EQ(found[0].process.pid, Pid{40});
  }
  q.pid = Pid{50};
  EXPECT_TRUE(store->list(q)->incidents.empty());
  q.pid = Pid{5};
  EXPECT_EQ(store->list(q)->incidents.size(), 1U);
}

TEST(IncidentStore, ListsByKindPidTargetAndTimeAndPagesStayStableAsIncidentsArrive) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  // Two at the same instant: pages are ordered by time, then by id.
  const int seconds[] = {0, 1, 2, 2, 3, 4};
  for (int i = 0; i < 6; ++i) {
    auto incident = makeIncident(i, IncidentState::kOpen, kT0 + std::chrono::seconds(seconds[i]));
    incident.target = i < 3 ? "db" : "web";
    ASSERT_TRUE(store->insert(incident).ok());
  }
  const auto pids = [](const std::vector<Incident>& incidents) {
    std::vector<int> out;
    for (const auto& i : incidents) out.push_back(i.process.pid.value);
    return out;
  };
  IncidentQuery q;
  q.kind = IncidentKind::kDeadlock;
  EXPECT_EQ(pids(store->list(q)->incidents), (std::vector<int>{4, 2, 0}));
  q = {};
  q.pid = Pid{3};
  EXPECT_EQ(pids(store->list(q)->incidents), (std::vector<int>{3}));
  q = {};
  q.target = "web";
  EXPECT_EQ(pids(store->list(q)->incidents), (std::vector<int>{5, 4, 3}));
  q = {};
  q.since = kT0 + 2s;
  EXPECT_EQ(pids(store->list(q)->incidents), (std::vector<int>{5, 4, 3, 2}));

  // Pages of two; an incident opened between the pages is not on the later ones.
  q = {};
  q.limit = 2;
  const auto first = store->list(q)->incidents;
  EXPECT_EQ(pids(first), (std::vector<int>{5, 4}));
  ASSERT_TRUE(store->insert(makeIncident(6, IncidentState::kOpen, kT0 + 10s)).ok());
  q.after = IncidentQuery::Position{first.back().opened_at, first.back().id};
  const auto second = store->list(q)->incidents;
  EXPECT_EQ(pids(second), (std::vector<int>{3, 2}));
  q.after = IncidentQuery::Position{second.back().opened_at, second.back().id};
  EXPECT_EQ(pids(store->list(q)->incidents), (std::vector<int>{1, 0}));
}

TEST(IncidentStore, IncidentsSurviveAReopen) {
  StateDir dir;
  std::int64_t id = 0;
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    id = *store->insert(makeIncident(3, IncidentState::kOpen, kT0));
  }
  auto store = std::move(IncidentStore::open(dir.file())).value();
  const auto open = store->list(IncidentQuery::by(IncidentState::kOpen, {}, 0))->incidents;
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0].id, id);
}

TEST(IncidentStore, AStoreMissingATableIsRefusedAtOpenNotAtEveryWrite) {
  for (const char* table : {"incidents", "targets"}) {
    StateDir dir;
    ASSERT_TRUE(IncidentStore::open(dir.file()).ok());
    ASSERT_EQ(execSql(dir.file(), std::string("DROP TABLE ") + table), "");
    const std::string why = "the incident store " + dir.file().string() +
                            " is damaged: its table " + table +
                            " is missing; move the file aside (a new store is made at the next "
                            "start) or restore it from a backup";
    const auto writer = IncidentStore::open(dir.file());
    ASSERT_FALSE(writer.ok()) << table;
    EXPECT_EQ(writer.error().message, why);
    const auto reader = IncidentStore::openReadOnly(dir.file());
    ASSERT_FALSE(reader.ok()) << table;
    EXPECT_EQ(reader.error().message, why);
  }
}

TEST(IncidentStore, KeepsTheIdsItIsGivenAndNeverReusesOne) {
  StateDir dir;
  std::int64_t last = 0;
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    EXPECT_EQ(*store->lastId(), 0);
    auto given = makeIncident(1, IncidentState::kResolved, kT0 - 48h);
    given.id = 41;
    EXPECT_EQ(*store->insert(given), 41);
    EXPECT_FALSE(store->insert(given).ok());  // the id is taken
    EXPECT_EQ(*store->insert(makeIncident(2, IncidentState::kOpen, kT0)), 42);
    ASSERT_EQ(*store->applyRetention(kT0, 24h, 10), 1U);  // 41 goes
    last = *store->lastId();
  }
  EXPECT_EQ(last, 42);
  auto store = std::move(IncidentStore::open(dir.file())).value();
  EXPECT_EQ(*store->lastId(), 42);  // across a reopen, and with 41 deleted
  EXPECT_EQ(*store->insert(makeIncident(3, IncidentState::kOpen, kT0)), 43);
}

TEST(IncidentStore, RetentionDropsOldAndExcessResolvedIncidentsButNeverOpenOnes) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(store->insert(makeIncident(1, IncidentState::kResolved, kT0 - 48h)).ok());
  ASSERT_TRUE(store->insert(makeIncident(2, IncidentState::kOpen, kT0 - 48h)).ok());
  for (int i = 3; i < 8; ++i) {
    ASSERT_TRUE(
        store->insert(makeIncident(i, IncidentState::kResolved, kT0 + std::chrono::seconds(i)))
            .ok());
  }
  auto removed = store->applyRetention(kT0 + 1h, 24h, 4);
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(*removed, 3U);  // the old one, then the two oldest beyond 4
  const auto left = store->list({})->incidents;
  ASSERT_EQ(left.size(), 4U);
  std::set<int> pids;
  for (const auto& i : left) pids.insert(i.process.pid.value);
  EXPECT_EQ(pids, (std::set<int>{2, 5, 6, 7}));
}

TEST(IncidentStore, RuntimeTargetsPersist) {
  StateDir dir;
  const auto defaults = *parseConfig("{}");
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    auto t = parseTarget(R"({"name": "db", "exe": "postgres", "interval_ms": 200})", defaults);
    ASSERT_TRUE(store->putTarget(*t).ok());
    t->interval = 300ms;
    ASSERT_TRUE(store->putTarget(*t).ok());  // same name: replaced
    auto u = parseTarget(R"({"name": "api", "pid": 42})", defaults);
    ASSERT_TRUE(store->putTarget(*u).ok());
  }
  auto store = std::move(IncidentStore::open(dir.file())).value();
  auto targets = store->targets(defaults);
  ASSERT_EQ(targets->size(), 2U);
  EXPECT_EQ((*targets)[0].name, "db");
  EXPECT_EQ((*targets)[0].interval, 300ms);
  EXPECT_EQ(*store->removeTarget("db"), true);
  EXPECT_EQ(*store->removeTarget("db"), false);
  EXPECT_EQ(store->targets(defaults)->size(), 1U);
}

TEST(IncidentStore, ReadOnlyOpenWorksBesideAWriterAndRefusesNonStores) {
  StateDir dir;
  auto writer = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(writer->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  auto reader = IncidentStore::openReadOnly(dir.file());
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  EXPECT_EQ((*reader)->list({})->incidents.size(), 1U);
  ASSERT_TRUE(writer->insert(makeIncident(2, IncidentState::kOpen, kT0)).ok());
  EXPECT_EQ((*reader)->list({})->incidents.size(), 2U);
}

/// The message of a failed openReadOnly, or "opened".
std::string readOnlyError(const std::filesystem::path& file) {
  auto store = IncidentStore::openReadOnly(file);
  return store ? "opened" : store.error().message;
}

TEST(IncidentStore, ReadOnlyOpenSaysWhyThereIsNoStoreWithThePath) {
  StateDir dir;
  const auto base = dir.file().parent_path();
  EXPECT_EQ(readOnlyError(base / "missing.db"),
            "no incident store at " + (base / "missing.db").string() +
                ": No such file or directory (the service creates it when it first starts)");
  EXPECT_EQ(readOnlyError(base / "no-dir" / "incidents.db"),
            "no incident store at " + (base / "no-dir" / "incidents.db").string() +
                ": No such file or directory (the service creates it when it first starts)");
  // The state directory is a file.
  { std::ofstream(base / "state") << "x"; }
  EXPECT_EQ(readOnlyError(base / "state" / "incidents.db"),
            "no incident store at " + (base / "state" / "incidents.db").string() + ": " +
                (base / "state").string() + " is a file, not a directory");
  std::filesystem::create_directory(base / "dir.db");
  EXPECT_EQ(readOnlyError(base / "dir.db"),
            (base / "dir.db").string() + " is a directory, not a wctmon incident store");
  // An empty database is no store yet: the service never shows one (see the next test).
  const auto fresh = base / "fresh.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(fresh.c_str(), &db), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(readOnlyError(fresh),
            "no incident store at " + fresh.string() + " yet: the file holds no tables");
  const auto other = base / "other.db";
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(readOnlyError(other),
            other.string() + " is not a wctmon incident store: it has no schema version");
  const auto junk = base / "junk.db";
  { std::ofstream(junk) << std::string(4096, 'x'); }
  EXPECT_EQ(readOnlyError(junk),
            junk.string() + " is not a wctmon incident store: file is not a database");
}

TEST(IncidentStore, AReaderNeverSeesAStoreHalfMade) {
  // The service creates its store while `wctmon incidents` may already poll for it: every read
  // finds either no store or a whole one, never "not a wctmon incident store".
  StateDir dir;
  constexpr int kStores = 100;
  std::atomic<int> created{0};
  std::thread writer([&] {
    for (int i = 0; i < kStores; ++i) {
      const auto file = dir.file().parent_path() / std::to_string(i) / "incidents.db";
      if (!IncidentStore::open(file)) break;
      created = i + 1;
    }
  });
  std::set<std::string> errors;
  int whole = 0;
  for (int i = 0; i < kStores; ++i) {
    const auto file = dir.file().parent_path() / std::to_string(i) / "incidents.db";
    while (true) {
      const bool done = created > i;
      auto store = IncidentStore::openReadOnly(file);
      if (store) {
        auto listed = (*store)->list({});
        ASSERT_TRUE(listed.ok()) << listed.error().message;
        EXPECT_TRUE(listed->incidents.empty());
        ++whole;
        break;
      }
      if (store.error().message.rfind("no incident store at " + file.string() + ":", 0) != 0) {
        errors.insert(store.error().message);
      }
      if (done) break;
    }
  }
  writer.join();
  EXPECT_EQ(created, kStores);
  EXPECT_EQ(whole, kStores);
  EXPECT_TRUE(errors.empty()) << *errors.begin();
}

TEST(IncidentStore, ReadingLeavesNoFileBehindAndSeesWhatARunningWriterCommitted) {
  StateDir dir;
  const auto wal = dir.file().string() + "-wal";
  const auto shm = dir.file().string() + "-shm";
  {
    auto writer = std::move(IncidentStore::open(dir.file())).value();
    ASSERT_TRUE(writer->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  }
  ASSERT_FALSE(std::filesystem::exists(wal));  // a clean close folds the log into the file
  {
    auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
    EXPECT_EQ(reader->list({})->incidents.size(), 1U);
  }
  EXPECT_FALSE(std::filesystem::exists(wal));
  EXPECT_FALSE(std::filesystem::exists(shm));

  // While the service writes, what it committed is in its log, not yet in the file.
  auto writer = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(writer->insert(makeIncident(2, IncidentState::kOpen, kT0)).ok());
  ASSERT_TRUE(std::filesystem::exists(wal));
  auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
  EXPECT_EQ(reader->list({})->incidents.size(), 2U);
}

/// Runs `body` in a child process as the unprivileged user nobody; its exit code.
int asNobody(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      _exit(90);
    }
    _exit(body());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(IncidentStore, AReadOnlyStateDirectoryCanBeReadWithOrWithoutTheWriter) {
  StateDir dir;
  const auto state = dir.file().parent_path();
  {
    auto writer = std::move(IncidentStore::open(dir.file())).value();
    ASSERT_TRUE(writer->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  }
  // Root ignores permission bits: the reader runs as nobody, for whom the directory is read-only,
  // let read the store as a member of its group (0640 at most: the writer narrows anything more).
  std::filesystem::permissions(state, std::filesystem::perms(0555));
  ASSERT_EQ(::chown(dir.file().c_str(), static_cast<uid_t>(-1), 65534), 0);
  std::filesystem::permissions(dir.file(), std::filesystem::perms(0640));
  const auto count = [&] {
    auto reader = IncidentStore::openReadOnly(dir.file());
    if (!reader) {
      std::fprintf(stderr, "%s\n", reader.error().message.c_str());
      return 100;
    }
    auto listed = (*reader)->list({});
    return listed ? static_cast<int>(listed->incidents.size()) : 101;
  };
  EXPECT_EQ(asNobody(count), 1);
  EXPECT_FALSE(std::filesystem::exists(dir.file().string() + "-shm"));

  // The service runs (as root): its log and index are there, read-only for nobody.
  auto writer = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(writer->insert(makeIncident(2, IncidentState::kOpen, kT0)).ok());
  EXPECT_EQ(asNobody(count), 2);
  std::filesystem::permissions(state, std::filesystem::perms(0700));
}

TEST(IncidentStore, TheServiceMakesAStoreOfAnEmptyFile) {
  StateDir dir;
  { std::ofstream(dir.file()) << ""; }
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), IncidentStore::kSchemaVersion);
  auto reader = IncidentStore::openReadOnly(dir.file());
  ASSERT_TRUE(reader.ok()) << reader.error().message;
}

TEST(IncidentStore, ANewerSchemaIsRefused) {
  StateDir dir;
  { auto store = std::move(IncidentStore::open(dir.file())).value(); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto store = IncidentStore::open(dir.file());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("schema version 99"), std::string::npos);
}

TEST(IncidentStore, KillNineMidWriteLosesNothingCommittedAndCorruptsNothing) {
  // 100 rounds: with the log folded every 8 pages, kills land in checkpoints as well as commits.
  std::mt19937 random(42);
  for (int round = 0; round < 100; ++round) {
    StateDir dir;
    int committed[2];
    ASSERT_EQ(::pipe(committed), 0);
    const pid_t writer = ::fork();
    if (writer == 0) {
      ::close(committed[0]);
      auto store = std::move(IncidentStore::open(dir.file())).value();
      for (int i = 0;; ++i) {
        auto id = store->insert(makeIncident(i, IncidentState::kOpen, kT0));
        if (!id) _exit(3);
        auto incident = makeIncident(i, IncidentState::kResolved, kT0);
        incident.id = *id;
        if (!store->update(incident)) _exit(4);
        // Reported only once both writes returned: committed.
        const std::int64_t value = *id;
        if (::write(committed[1], &value, sizeof(value)) != sizeof(value)) _exit(5);
      }
    }
    ::close(committed[1]);
    // The kill lands at a random moment once writes are under way, however long creating the
    // store took on a loaded machine.
    std::vector<std::int64_t> ids;
    std::int64_t value = 0;
    if (::read(committed[0], &value, sizeof(value)) == sizeof(value)) ids.push_back(value);
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 80));
    ::kill(writer, SIGKILL);
    int status = 0;
    ::waitpid(writer, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer failed with " << WEXITSTATUS(status);
    while (::read(committed[0], &value, sizeof(value)) == sizeof(value)) ids.push_back(value);
    ::close(committed[0]);

    auto store = IncidentStore::open(dir.file());
    ASSERT_TRUE(store.ok()) << store.error().message;
    for (const auto id : ids) {
      const auto got = (*store)->get(id);
      ASSERT_TRUE(got.ok() && got->has_value()) << "lost committed incident " << id;
      EXPECT_EQ((**got).state, IncidentState::kResolved);
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir.file().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* check = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(check, 0)), "ok");
    sqlite3_finalize(check);
    sqlite3_close(db);
    EXPECT_FALSE(ids.empty());
  }
}

TEST(IncidentStore, EveryProcessOfAnIncidentComesBack) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  auto incident = makeIncident(10, IncidentState::kOpen, kT0);
  incident.processes = {{incident.process, "proc10"},
                        {ProcessIdentity{Pid{20}, 18446744073709551615ULL}, "other \"one\""}};
  incident.id = *store->insert(incident);
  auto got = *store->get(incident.id);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->processes, incident.processes);
  // Renamed by exec, and a third process joined.
  incident.processes[1].name = "python3";
  incident.processes.push_back({ProcessIdentity{Pid{30}, 3}, "c"});
  ASSERT_TRUE(store->update(incident).ok());
  EXPECT_EQ((*store->get(incident.id))->processes, incident.processes);
  // An incident stored without the list reads back with its one process; with no chains or
  // evidence either, it keeps nothing at all beside its columns.
  auto bare = makeIncident(12, IncidentState::kOpen, kT0);
  bare.chains.clear();
  bare.evidence.clear();
  const auto id = *store->insert(bare);
  const auto got_bare = store->get(id);
  ASSERT_TRUE(got_bare.ok()) << got_bare.error().message;
  EXPECT_EQ((*got_bare)->processes,
            (std::vector<IncidentProcess>{{bare.process, bare.process_name}}));
  EXPECT_TRUE((*got_bare)->chains.empty());
  EXPECT_EQ(
      querySql(dir.file(), "SELECT length(detail) FROM incidents WHERE id = " + std::to_string(id)),
      std::vector<std::string>{"0"});
}

/// A store as version 1 wrote it (one process per incident), with one open incident.
void writeVersion1Store(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  const char* sql = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
CREATE TABLE incidents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('deadlock', 'hang')),
  state TEXT NOT NULL CHECK (state IN ('open', 'resolved')),
  pid INTEGER NOT NULL,
  process_start_time INTEGER NOT NULL,
  process_name TEXT NOT NULL,
  target TEXT NOT NULL,
  signature TEXT NOT NULL,
  threads TEXT NOT NULL,
  spurs TEXT NOT NULL,
  opened_at_ns INTEGER NOT NULL,
  updated_at_ns INTEGER NOT NULL,
  resolved_at_ns INTEGER,
  resolution TEXT NOT NULL,
  summary TEXT NOT NULL,
  chains TEXT NOT NULL,
  evidence TEXT NOT NULL
);
CREATE INDEX incidents_by_state ON incidents(state, opened_at_ns);
CREATE TABLE targets (name TEXT PRIMARY KEY, spec TEXT NOT NULL, created_at_ns INTEGER NOT NULL);
INSERT INTO incidents (kind, state, pid, process_start_time, process_name, target, signature,
  threads, spurs, opened_at_ns, updated_at_ns, resolved_at_ns, resolution, summary, chains,
  evidence) VALUES ('deadlock', 'open', 42, 4242, 'server', 'db', 'deadlock [42:43] [7:7]',
  '42:43 7:7', '', 1795000000000000000, 1795000001000000000, NULL, '', 'old one', '[]', '[]');
)sql";
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &error), SQLITE_OK) << error;
  sqlite3_close(db);
}

TEST(IncidentStore, AVersion1StoreIsMigratedAndKeepsItsIncidents) {
  StateDir dir;
  writeVersion1Store(dir.file());
  {
    // Read-only (an older service still writes it): readable as it is.
    auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
    const auto listed = reader->list({})->incidents;
    ASSERT_EQ(listed.size(), 1U);
    EXPECT_EQ(listed[0].processes,
              (std::vector<IncidentProcess>{{ProcessIdentity{Pid{42}, 4242}, "server"}}));
  }
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), IncidentStore::kSchemaVersion);
  EXPECT_EQ(fileSchema(dir.file()), "4: every detail in binary");
  auto listed = (*store)->list({})->incidents;
  ASSERT_EQ(listed.size(), 1U);
  auto& old = listed[0];
  EXPECT_EQ(old.summary, "old one");
  EXPECT_EQ(old.threads, (std::vector<ThreadRef>{{Pid{42}, Tid{43}}, {Pid{7}, Tid{7}}}));
  EXPECT_EQ(old.processes,
            (std::vector<IncidentProcess>{{ProcessIdentity{Pid{42}, 4242}, "server"}}));
  old.processes.push_back({ProcessIdentity{Pid{7}, 77}, "peer"});
  ASSERT_TRUE((*store)->update(old).ok());
  EXPECT_EQ((*(*store)->get(old.id))->processes, old.processes);
}

/// An incident with every field set, the detail of every kind included, some at their extremes.
Incident fullIncident() {
  auto i = makeIncident(10, IncidentState::kResolved, kT0);
  i.kind = IncidentKind::kDeadlock;
  i.target = "db \"main\"";
  i.summary = "deadlock of 2 threads across 2 processes: é";
  i.opened_at = kT0 + 123456789ns;  // nanoseconds survive
  i.processes = {{i.process, "proc10"},
                 {ProcessIdentity{Pid{20}, std::numeric_limits<std::uint64_t>::max()}, "peer"}};
  auto& chain = i.chains[0];
  chain.nodes[0].context_switches = 7;
  WaitNode lock;
  lock.type = ObjectType::kFileLock;
  lock.status = ObjectStatus::kOwned;
  lock.name = "/tmp/x [0-EOF]";
  lock.timeout = 0ms;
  lock.alertable = true;
  lock.owner_pids = {Pid{20}};
  lock.detail = "FLOCK write lock; waiting for write";
  chain.nodes.push_back(lock);
  WaitNode peer;
  peer.type = ObjectType::kThread;
  peer.status = ObjectStatus::kBlocked;
  peer.thread = ThreadRef{Pid{20}, Tid{20}};
  peer.thread_name = "peer";
  peer.process_name = "peer";
  chain.nodes.push_back(peer);
  chain.is_cycle = true;
  chain.truncated = true;
  chain.node_count = 40;
  i.chains.push_back(chain);
  ThreadCapture quiet;
  quiet.thread = ThreadRef{Pid{20}, Tid{20}};
  quiet.captured = true;
  quiet.architecture = "x86_64";
  quiet.registers = {{"rip", std::numeric_limits<std::uint64_t>::max()}, {"rsp", 0}};
  quiet.frames = {{0x7f00, "write", "/lib/libc.so.6", 0x17, false}, {0x401000, "", "", 0, true}};
  quiet.method = CaptureMethod::kNotStopped;
  quiet.note = "not stopped: a write in progress";
  quiet.tracer_pid = 0;
  i.evidence.push_back(quiet);
  ThreadCapture traced;
  traced.thread = ThreadRef{Pid{10}, Tid{12}};
  traced.error = "already traced by process 99";
  traced.tracer_pid = 99;
  i.evidence.push_back(traced);
  return i;
}

TEST(IncidentStore, EveryFieldComesBackThroughTheBinaryForm) {
  StateDir dir;
  auto incident = fullIncident();
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    incident.id = *store->insert(incident);
  }
  EXPECT_EQ(fileSchema(dir.file()), "4: every detail in binary");
  auto store = std::move(IncidentStore::openReadOnly(dir.file())).value();
  const auto got = store->get(incident.id);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  expectSame(**got, incident);
  EXPECT_EQ((*got)->processes, incident.processes);
  const auto listed = store->list({});
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->incidents.size(), 1U);
  expectSame(listed->incidents[0], incident);
  EXPECT_TRUE(listed->unreadable.empty());
  EXPECT_EQ(listed->warning, "");
}

TEST(IncidentStore, ARowThatCannotBeReadIsReportedNotDropped) {
  StateDir dir;
  std::int64_t damaged = 0;
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    ASSERT_TRUE(store->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
    damaged = *store->insert(makeIncident(2, IncidentState::kOpen, kT0 + 1s));
    ASSERT_TRUE(store->insert(makeIncident(3, IncidentState::kOpen, kT0 + 2s)).ok());
  }
  // Bytes that are no wctmon.v1.Incident (field 16, a chain, cut short).
  ASSERT_EQ(execSql(dir.file(), "UPDATE incidents SET detail = x'82011000' WHERE id = " +
                                    std::to_string(damaged)),
            "");
  for (const bool read_only : {true, false}) {
    auto store = std::move(read_only ? IncidentStore::openReadOnly(dir.file())
                                     : IncidentStore::open(dir.file()))
                     .value();
    const auto listed = store->list({});
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    ASSERT_EQ(listed->incidents.size(), 2U);
    EXPECT_EQ(listed->incidents[0].process.pid, Pid{3});
    EXPECT_EQ(listed->incidents[1].process.pid, Pid{1});
    EXPECT_EQ(listed->unreadable, std::vector<std::int64_t>{damaged});
    EXPECT_EQ(listed->warning,
              dir.file().string() + ": 1 stored incident cannot be read and is left out (id " +
                  std::to_string(damaged) + "): incident " + std::to_string(damaged) +
                  ": its processes, chains and evidence do not parse as a wctmon.v1.Incident");
    const auto got = store->get(damaged);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().code, ErrorCode::kIo);
    EXPECT_EQ(got.error().message,
              dir.file().string() + ": incident " + std::to_string(damaged) +
                  " cannot be read: its processes, chains and evidence do not parse as a "
                  "wctmon.v1.Incident");
  }
  // Rewritten whole, it reads again.
  auto store = std::move(IncidentStore::open(dir.file())).value();
  auto again = makeIncident(2, IncidentState::kResolved, kT0 + 1s);
  again.id = damaged;
  ASSERT_TRUE(store->update(again).ok());
  const auto listed = store->list({});
  EXPECT_EQ(listed->incidents.size(), 3U);
  EXPECT_TRUE(listed->unreadable.empty());
}

TEST(IncidentStore, ErrorsNameTheFileAndSayWhatKindOfFailureItIs) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  auto incident = makeIncident(1, IncidentState::kOpen, kT0);
  incident.id = 12;
  ASSERT_TRUE(store->insert(incident).ok());
  // The id is taken: the caller's mistake.
  auto taken = store->insert(incident);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(taken.error().message, dir.file().string() +
                                       ": cannot store incident 12: UNIQUE constraint failed: "
                                       "incidents.id");
  incident.id = 13;
  auto missing = store->update(incident);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(missing.error().message,
            dir.file().string() + ": cannot update incident 13: there is none");

  store.reset();

  // The disk refuses to grow the files (a file size limit fails a write as a full disk does),
  // in a child process so that the limit stays there.
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    auto writer = IncidentStore::open(dir.file());
    if (!writer) _exit(90);
    const auto size = std::max(std::filesystem::file_size(dir.file()),
                               std::filesystem::file_size(dir.file().string() + "-wal"));
    const rlimit limit{size, size};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(91);
    auto big = fullIncident();
    big.summary = std::string(4 * size, 's');
    auto full = (*writer)->insert(big);
    if (full.ok()) _exit(92);
    const std::string expected = dir.file().string() + ": cannot store a new incident: ";
    if (full.error().code != ErrorCode::kIo || full.error().message.rfind(expected, 0) != 0) {
      std::fprintf(stderr, "%s\n", full.error().message.c_str());
      _exit(93);
    }
    _exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(IncidentStore::open(dir.file()).value()->list({})->incidents.size(), 1U);

  // A newer schema than this build knows.
  ASSERT_EQ(execSql(dir.file(), "UPDATE schema_version SET version = 99"), "");
  const auto newer = IncidentStore::open(dir.file());
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(newer.error().message, dir.file().string() +
                                       " has schema version 99, newer than this wctmon "
                                       "understands (4)");
}

/// Every key of `old` has the same value in `now` (which may have keys added since); arrays
/// element by element.
::testing::AssertionResult holdsAllOf(const nlohmann::json& now, const nlohmann::json& old,
                                      const std::string& path = "") {
  if (old.is_object()) {
    if (!now.is_object()) return ::testing::AssertionFailure() << path << " is not an object";
    for (const auto& [key, value] : old.items()) {
      if (!now.contains(key)) return ::testing::AssertionFailure() << path << "/" << key << " lost";
      if (auto r = holdsAllOf(now[key], value, path + "/" + key); !r) return r;
    }
    return ::testing::AssertionSuccess();
  }
  if (old.is_array()) {
    if (!now.is_array() || now.size() != old.size()) {
      return ::testing::AssertionFailure() << path << ": " << now.dump() << " was " << old.dump();
    }
    for (std::size_t k = 0; k < old.size(); ++k) {
      if (auto r = holdsAllOf(now[k], old[k], path + "/" + std::to_string(k)); !r) return r;
    }
    return ::testing::AssertionSuccess();
  }
  if (now != old) {
    return ::testing::AssertionFailure() << path << ": " << now.dump() << " was " << old.dump();
  }
  return ::testing::AssertionSuccess();
}

/// A store the previous version (schema version 2) wrote in tests/store/data: its service caught
/// a deadlock between two threads (resolved when the process exited) and one between two
/// processes (open).
void loadVersion2Store(const std::filesystem::path& file) {
  std::ifstream in(std::filesystem::path(WCTMON_STORE_DATA_DIR) / "incidents-v2.sql");
  ASSERT_TRUE(in) << "no " << WCTMON_STORE_DATA_DIR << "/incidents-v2.sql";
  std::stringstream sql;
  sql << in.rdbuf();
  ASSERT_EQ(execSql(file, sql.str()), "");
  ASSERT_EQ(fileSchema(file),
            "2 with column chains with column evidence with column processes without column "
            "detail");
}

TEST(IncidentStore, AStoreThePreviousVersionWroteIsMigratedWhole) {
  StateDir dir;
  loadVersion2Store(dir.file());
  // What the previous version kept, as it kept it.
  std::map<std::int64_t, nlohmann::json> before;
  for (const auto& row : querySql(dir.file(),
                                  "SELECT json_object('id', id, 'chains', json(chains), "
                                  "'evidence', json(evidence), 'processes', json(processes)) "
                                  "FROM incidents")) {
    const auto j = nlohmann::json::parse(row);
    before[j["id"].get<std::int64_t>()] = j;
  }
  ASSERT_EQ(before.size(), 2U);
  {
    // Read-only, as an older service still writing it would leave it: readable as it is.
    auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
    EXPECT_EQ(reader->schemaVersion(), 2);
    const auto listed = reader->list({});
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    EXPECT_EQ(listed->incidents.size(), 2U);
    EXPECT_TRUE(listed->unreadable.empty()) << listed->warning;
  }
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), 4);
  EXPECT_EQ(fileSchema(dir.file()), "4: every detail in binary");
  const auto listed = (*store)->list({});
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_TRUE(listed->unreadable.empty()) << listed->warning;
  ASSERT_EQ(listed->incidents.size(), 2U);
  for (const auto& i : listed->incidents) {
    SCOPED_TRACE("incident " + std::to_string(i.id));
    const auto& old = before.at(i.id);
    EXPECT_TRUE(holdsAllOf(nlohmann::json::parse(wire::chainsToJson(i.chains)), old["chains"]));
    EXPECT_TRUE(
        holdsAllOf(nlohmann::json::parse(wire::capturesToJson(i.evidence)), old["evidence"]));
    EXPECT_TRUE(
        holdsAllOf(nlohmann::json::parse(wire::processesToJson(i.processes)), old["processes"]));
  }
  // Newest first: the cross-process deadlock, still open, then the resolved one.
  const auto& across = listed->incidents[0];
  const auto& within = listed->incidents[1];
  EXPECT_EQ(across.state, IncidentState::kOpen);
  ASSERT_EQ(across.processes.size(), 2U);
  EXPECT_NE(across.processes[0].identity.pid, across.processes[1].identity.pid);
  EXPECT_EQ(within.state, IncidentState::kResolved);
  EXPECT_EQ(within.resolution, "the process exited");
  ASSERT_EQ(within.processes.size(), 1U);
  EXPECT_EQ(within.processes[0].name, "wctmon-fixture");
  for (const auto* i : {&across, &within}) {
    EXPECT_EQ(i->kind, IncidentKind::kDeadlock);
    ASSERT_EQ(i->chains.size(), 2U);
    EXPECT_TRUE(i->chains[0].is_cycle);
    EXPECT_EQ(i->chains[0].nodes.size(), 5U);
    EXPECT_TRUE(i->chains[0].nodes[0].wait_time.has_value());
    ASSERT_EQ(i->evidence.size(), 2U);
    EXPECT_TRUE(i->evidence[0].captured);
    EXPECT_EQ(i->evidence[0].registers.size(), 27U);
    EXPECT_NE(i->evidence[0].registers[0].value, 0U);  // rip, from "0x7f…"
    EXPECT_FALSE(i->evidence[0].frames.empty());
  }
  // The next id follows the old ones, and a new incident is stored in the new form.
  EXPECT_EQ(*(*store)->lastId(), 2);
  EXPECT_EQ(*(*store)->insert(fullIncident()), 3);
  EXPECT_EQ(fileSchema(dir.file()), "4: every detail in binary");
}

TEST(IncidentStore, AMigrationKeepsAndReportsARowWhoseJsonDoesNotParse) {
  StateDir dir;
  loadVersion2Store(dir.file());
  ASSERT_EQ(execSql(dir.file(), "UPDATE incidents SET evidence = '[{\"thread\": ' WHERE id = 1"),
            "");
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), 4);
  // The row is still there, with what it held, and every reader says it cannot be read.
  EXPECT_EQ(querySql(dir.file(), "SELECT typeof(detail) FROM incidents ORDER BY id"),
            (std::vector<std::string>{"text", "blob"}));
  const auto listed = (*store)->list({});
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->incidents.size(), 1U);
  EXPECT_EQ(listed->incidents[0].id, 2);
  EXPECT_EQ(listed->unreadable, std::vector<std::int64_t>{1});
  EXPECT_EQ(listed->warning.rfind(dir.file().string() +
                                      ": 1 stored incident cannot be read and is left out (id "
                                      "1): incident 1: its processes, chains and evidence are "
                                      "JSON of an older store that does not parse (",
                                  0),
            0U)
      << listed->warning;
  EXPECT_EQ(listed->warning.find('\n'), std::string::npos) << "one line";
  const auto got = (*store)->get(1);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kIo);
}

}  // namespace
}  // namespace wctmon

namespace wctmon {
namespace {

/// The files of the state directory whose name starts with "incidents.db".
std::set<std::string> storeFiles(const StateDir& dir) {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("incidents.db")) out.insert(name);
  }
  return out;
}

/// A store of 300 incidents (about 100 pages), closed.
void fillStore(const StateDir& dir) {
  auto store = std::move(IncidentStore::open(dir.file())).value();
  for (int i = 1; i <= 300; ++i) {
    ASSERT_TRUE(store->insert(makeIncident(i, IncidentState::kResolved, kT0)).ok());
  }
}

std::string readBytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeBytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(IncidentStore, ADamagedStoreIsMovedAsideWithSqlitesReasonAndANewOneIsMade) {
  struct Damage {
    const char* name;
    std::function<std::string(std::string)> apply;
    /// What SQLite's reason says.
    const char* reason;
  };
  const std::vector<Damage> damages = {
      {"a garbage header",
       [](std::string bytes) {
         for (std::size_t k = 0; k < 100; ++k) bytes[k] = static_cast<char>(0xA5 ^ k);
         return bytes;
       },
       "file is not a database"},
      {"a file truncated in its middle",
       [](std::string bytes) { return bytes.substr(0, bytes.size() / 2 + 100); }, "malformed"},
      {"a bad page",
       [](std::string bytes) {
         // The last page (of the incidents table), overwritten.
         for (std::size_t k = bytes.size() - 4096; k < bytes.size(); ++k) {
           bytes[k] = static_cast<char>(k * 7);
         }
         return bytes;
       },
       "the incident store"},
      {"a table of the schema dropped", nullptr, "its table targets is missing"},
  };
  for (const auto& damage : damages) {
    SCOPED_TRACE(damage.name);
    StateDir dir;
    fillStore(dir);
    if (damage.apply) {
      writeBytes(dir.file(), damage.apply(readBytes(dir.file())));
    } else {
      ASSERT_EQ(execSql(dir.file(), "DROP TABLE targets"), "");
    }
    const auto damaged = readBytes(dir.file());
    // The service's open without recovery refuses it, naming the file.
    const auto refused = IncidentStore::open(dir.file());
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find(dir.file().string()), std::string::npos)
        << refused.error().message;

    const auto now = kT0 + 3h + 25min;  // 2026-11-18T11:06:40Z + 3h25m
    auto opened = IncidentStore::openOrMoveAside(dir.file(), now);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    ASSERT_TRUE(opened->moved_aside.has_value());
    const auto aside = dir.path() / "incidents.db.corrupt-20261118T143140Z";
    EXPECT_EQ(opened->moved_aside->to, aside);
    EXPECT_NE(opened->moved_aside->reason.find(damage.reason), std::string::npos)
        << opened->moved_aside->reason;
    EXPECT_NE(opened->moved_aside->reason.find(dir.file().string()), std::string::npos)
        << opened->moved_aside->reason;
    // Nothing of it is lost: the damaged bytes are kept whole under the new name.
    EXPECT_EQ(readBytes(aside), damaged);
    // The new store is empty and takes writes.
    auto& store = *opened->store;
    EXPECT_TRUE(store.list(IncidentQuery{})->incidents.empty());
    ASSERT_TRUE(store.insert(makeIncident(7, IncidentState::kOpen, kT0)).ok());
    EXPECT_EQ(querySql(dir.file(), "PRAGMA integrity_check"), std::vector<std::string>{"ok"});

    // A second damage in the same second gets a name of its own.
    opened->store.reset();
    writeBytes(dir.file(), std::string(8192, 'x'));
    auto again = IncidentStore::openOrMoveAside(dir.file(), now);
    ASSERT_TRUE(again.ok()) << again.error().message;
    ASSERT_TRUE(again->moved_aside.has_value());
    EXPECT_EQ(again->moved_aside->to, dir.path() / "incidents.db.corrupt-20261118T143140Z-2");
    EXPECT_EQ(readBytes(aside), damaged);
  }
}

TEST(IncidentStore, AStoreThatIsNotDamagedIsNeverMovedAside) {
  {
    // A newer schema: another version's store, kept for it.
    StateDir dir;
    fillStore(dir);
    ASSERT_EQ(execSql(dir.file(), "UPDATE schema_version SET version = 99"), "");
    const auto opened = IncidentStore::openOrMoveAside(dir.file(), kT0);
    ASSERT_FALSE(opened.ok());
    EXPECT_NE(opened.error().message.find("schema version 99"), std::string::npos);
    EXPECT_EQ(storeFiles(dir), std::set<std::string>{"incidents.db"});
  }
  {
    // A file the service may not open (it runs as nobody here): root's, 0600.
    StateDir dir;
    fillStore(dir);
    std::filesystem::permissions(dir.path(), std::filesystem::perms(0777));
    std::filesystem::permissions(dir.file(), std::filesystem::perms(0600));
    const auto file = dir.file();
    EXPECT_EQ(
        asNobody([&] {
          const auto opened = IncidentStore::openOrMoveAside(file, kT0);
          if (opened.ok()) return 1;
          if (opened.error().message.find("unable to open database file") == std::string::npos) {
            return 2;
          }
          return 0;
        }),
        0);
    EXPECT_EQ(storeFiles(dir), std::set<std::string>{"incidents.db"});
    std::filesystem::permissions(dir.path(), std::filesystem::perms(0700));
  }
}

TEST(IncidentStore, AStoreDeletedOrReplacedWhileOpenIsNoticedAndMadeAgain) {
  StateDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(store->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  EXPECT_EQ(store->ensureCurrent().value(), "");

  // `rm incidents.db` while the service runs (its log left behind).
  std::filesystem::remove(dir.file());
  EXPECT_EQ(store->ensureCurrent().value(), dir.file().string() + ": it was deleted");
  EXPECT_EQ(store->ensureCurrent().value(), "");
  auto second = makeIncident(2, IncidentState::kOpen, kT0);
  second.id = 2;
  ASSERT_TRUE(store->insert(second).ok());
  // What is written now is in the file at the path, as any reader sees it.
  {
    auto reader = IncidentStore::openReadOnly(dir.file());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    const auto listed = (*reader)->list(IncidentQuery{});
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->incidents.size(), 1U);
    EXPECT_EQ(listed->incidents[0].id, 2);
  }

  // Another store moved over it (a backup restored).
  StateDir other;
  {
    auto restored = std::move(IncidentStore::open(other.file())).value();
    auto old = makeIncident(3, IncidentState::kResolved, kT0);
    old.id = 3;
    ASSERT_TRUE(restored->insert(old).ok());
  }
  std::filesystem::rename(other.file(), dir.file());
  EXPECT_EQ(store->ensureCurrent().value(), dir.file().string() + ": another file took its place");
  EXPECT_EQ(querySql(dir.file(), "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  EXPECT_TRUE(store->get(3)->has_value());
  ASSERT_TRUE(store->update(second).ok() == false);  // not in this file: the caller inserts it
  ASSERT_TRUE(store->insert(second).ok());
  EXPECT_EQ(querySql(dir.file(), "SELECT id FROM incidents ORDER BY id"),
            (std::vector<std::string>{"2", "3"}));

  // Ids the file that went gave are not given again.
  ASSERT_TRUE(store->keepIdsAbove(41).ok());
  ASSERT_TRUE(store->keepIdsAbove(7).ok());  // never lowered
  EXPECT_EQ(store->lastId().value(), 41);
  EXPECT_EQ(store->insert(makeIncident(5, IncidentState::kOpen, kT0)).value(), 42);
  EXPECT_EQ(querySql(dir.file(), "DELETE FROM incidents WHERE id = 42"),
            std::vector<std::string>{});

  // Moved away (`mv incidents.db elsewhere`): everything committed is in the file that went.
  auto fourth = makeIncident(4, IncidentState::kOpen, kT0);
  fourth.id = 4;
  ASSERT_TRUE(store->insert(fourth).ok());
  const auto moved = dir.path() / "kept.db";
  std::filesystem::rename(dir.file(), moved);
  EXPECT_EQ(store->ensureCurrent().value(), dir.file().string() + ": it was moved away");
  EXPECT_EQ(querySql(moved, "SELECT id FROM incidents ORDER BY id"),
            (std::vector<std::string>{"2", "3", "4"}));
  EXPECT_TRUE(store->list(IncidentQuery{})->incidents.empty());
}

}  // namespace
}  // namespace wctmon
