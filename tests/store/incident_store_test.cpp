// The incident store on real SQLite files.
#include "store/incident_store.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

namespace wctmon {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/wctmon-store-XXXXXX";
    path_ = ::mkdtemp(dir);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  [[nodiscard]] std::filesystem::path file() const { return path_ / "incidents.db"; }

 private:
  std::filesystem::path path_;
};

const auto kT0 = std::chrono::system_clock::time_point(std::chrono::seconds(1795000000));

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
  EXPECT_EQ(a.signature, b.signature);
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
  TempDir dir;
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
  TempDir dir;
  auto store = std::move(IncidentStore::open(dir.file())).value();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        store
            ->insert(makeIncident(i, i % 3 == 0 ? IncidentState::kOpen : IncidentState::kResolved,
                                  kT0 + std::chrono::seconds(i)))
            .ok());
  }
  auto all = store->list({});
  ASSERT_EQ(all->size(), 6U);
  EXPECT_EQ((*all)[0].process.pid, Pid{5});
  EXPECT_EQ(store->list({.state = IncidentState::kOpen, .process = {}, .limit = 0})->size(), 2U);
  EXPECT_EQ(store->list({.state = IncidentState::kResolved, .process = {}, .limit = 3})->size(),
            3U);
  const auto one = store->list({.state = {}, .process = ProcessIdentity{Pid{4}, 1004}, .limit = 0});
  ASSERT_EQ(one->size(), 1U);
  EXPECT_EQ((*one)[0].process_name, "proc4");
}

TEST(IncidentStore, IncidentsSurviveAReopen) {
  TempDir dir;
  std::int64_t id = 0;
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    id = *store->insert(makeIncident(3, IncidentState::kOpen, kT0));
  }
  auto store = std::move(IncidentStore::open(dir.file())).value();
  const auto open = store->list({.state = IncidentState::kOpen, .process = {}, .limit = 0});
  ASSERT_EQ(open->size(), 1U);
  EXPECT_EQ((*open)[0].id, id);
}

TEST(IncidentStore, KeepsTheIdsItIsGivenAndNeverReusesOne) {
  TempDir dir;
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
  TempDir dir;
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
  const auto left = *store->list({});
  ASSERT_EQ(left.size(), 4U);
  std::set<int> pids;
  for (const auto& i : left) pids.insert(i.process.pid.value);
  EXPECT_EQ(pids, (std::set<int>{2, 5, 6, 7}));
}

TEST(IncidentStore, RuntimeTargetsPersist) {
  TempDir dir;
  const auto defaults = *parseConfig("{}").config;
  {
    auto store = std::move(IncidentStore::open(dir.file())).value();
    std::vector<ConfigError> errors;
    auto t =
        parseTarget(R"({"name": "db", "exe": "postgres", "interval_ms": 200})", defaults, errors);
    ASSERT_TRUE(store->putTarget(*t).ok());
    t->interval = 300ms;
    ASSERT_TRUE(store->putTarget(*t).ok());  // same name: replaced
    auto u = parseTarget(R"({"name": "api", "pid": 42})", defaults, errors);
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
  TempDir dir;
  auto writer = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(writer->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  auto reader = IncidentStore::openReadOnly(dir.file());
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  EXPECT_EQ((*reader)->list({})->size(), 1U);
  ASSERT_TRUE(writer->insert(makeIncident(2, IncidentState::kOpen, kT0)).ok());
  EXPECT_EQ((*reader)->list({})->size(), 2U);
}

/// The message of a failed openReadOnly, or "opened".
std::string readOnlyError(const std::filesystem::path& file) {
  auto store = IncidentStore::openReadOnly(file);
  return store ? "opened" : store.error().message;
}

TEST(IncidentStore, ReadOnlyOpenSaysWhyThereIsNoStoreWithThePath) {
  TempDir dir;
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
  TempDir dir;
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
        EXPECT_TRUE(listed->empty());
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
  TempDir dir;
  const auto wal = dir.file().string() + "-wal";
  const auto shm = dir.file().string() + "-shm";
  {
    auto writer = std::move(IncidentStore::open(dir.file())).value();
    ASSERT_TRUE(writer->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  }
  ASSERT_FALSE(std::filesystem::exists(wal));  // a clean close folds the log into the file
  {
    auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
    EXPECT_EQ(reader->list({})->size(), 1U);
  }
  EXPECT_FALSE(std::filesystem::exists(wal));
  EXPECT_FALSE(std::filesystem::exists(shm));

  // While the service writes, what it committed is in its log, not yet in the file.
  auto writer = std::move(IncidentStore::open(dir.file())).value();
  ASSERT_TRUE(writer->insert(makeIncident(2, IncidentState::kOpen, kT0)).ok());
  ASSERT_TRUE(std::filesystem::exists(wal));
  auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
  EXPECT_EQ(reader->list({})->size(), 2U);
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
  TempDir dir;
  const auto state = dir.file().parent_path();
  {
    auto writer = std::move(IncidentStore::open(dir.file())).value();
    ASSERT_TRUE(writer->insert(makeIncident(1, IncidentState::kOpen, kT0)).ok());
  }
  // Root ignores permission bits: the reader runs as nobody, for whom the directory is read-only.
  std::filesystem::permissions(state, std::filesystem::perms(0555));
  std::filesystem::permissions(dir.file(), std::filesystem::perms(0644));
  const auto count = [&] {
    auto reader = IncidentStore::openReadOnly(dir.file());
    if (!reader) {
      std::fprintf(stderr, "%s\n", reader.error().message.c_str());
      return 100;
    }
    auto listed = (*reader)->list({});
    return listed ? static_cast<int>(listed->size()) : 101;
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
  TempDir dir;
  { std::ofstream(dir.file()) << ""; }
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), IncidentStore::kSchemaVersion);
  auto reader = IncidentStore::openReadOnly(dir.file());
  ASSERT_TRUE(reader.ok()) << reader.error().message;
}

TEST(IncidentStore, ANewerSchemaIsRefused) {
  TempDir dir;
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
  std::mt19937 random(42);
  for (int round = 0; round < 8; ++round) {
    TempDir dir;
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
  TempDir dir;
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
  // An incident stored without the list reads back with its one process.
  auto bare = makeIncident(12, IncidentState::kOpen, kT0);
  const auto id = *store->insert(bare);
  EXPECT_EQ((*store->get(id))->processes,
            (std::vector<IncidentProcess>{{bare.process, bare.process_name}}));
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
  TempDir dir;
  writeVersion1Store(dir.file());
  {
    // Read-only (an older service still writes it): readable as it is.
    auto reader = std::move(IncidentStore::openReadOnly(dir.file())).value();
    const auto listed = *reader->list({});
    ASSERT_EQ(listed.size(), 1U);
    EXPECT_EQ(listed[0].processes,
              (std::vector<IncidentProcess>{{ProcessIdentity{Pid{42}, 4242}, "server"}}));
  }
  auto store = IncidentStore::open(dir.file());
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ((*store)->schemaVersion(), 2);
  auto listed = *(*store)->list({});
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

}  // namespace
}  // namespace wctmon
