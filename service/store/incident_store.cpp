#include "store/incident_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <system_error>

#include "model/format.h"
#include "wire/json_reader.h"
#include "wire/json_writer.h"

namespace wctmon {
namespace {

/// Schema steps, applied in order inside one transaction each; step i brings the schema to
/// version i + 1. Never edit a released step: add one.
const char* const kMigrations[] = {
    R"sql(
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
CREATE TABLE targets (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  created_at_ns INTEGER NOT NULL
);
)sql",
    // Every process of an incident (a deadlock across processes is one incident), as the proto3
    // JSON of its IncidentProcess list; empty for incidents stored before: their one process.
    R"sql(
ALTER TABLE incidents ADD COLUMN processes TEXT NOT NULL DEFAULT '';
)sql",
};

static_assert(std::size(kMigrations) == IncidentStore::kSchemaVersion);

/// The "file:" URI of `path` with `query`: bytes that URIs reserve are percent-encoded.
std::string fileUri(const std::filesystem::path& path, const std::string& query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const char c : path.string()) {
    const auto b = static_cast<unsigned char>(c);
    if (std::isalnum(b) != 0 || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += c;
    } else {
      uri += '%';
      uri += kHex[b >> 4];
      uri += kHex[b & 0xf];
    }
  }
  return uri + "?" + query;
}

/// SQLite's message for the last failure on `db`, with the system's reason when there is one:
/// "unable to open database file" alone does not say why.
std::string sqliteReason(sqlite3* db, int rc) {
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int system = db != nullptr ? sqlite3_system_errno(db) : 0;
  if (system != 0) message += " (" + std::generic_category().message(system) + ")";
  return message;
}

std::int64_t toNs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point fromNs(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

std::vector<ThreadRef> threadsFromText(const std::string& text) {
  std::vector<ThreadRef> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const auto item = text.substr(pos, end - pos);
    const auto colon = item.find(':');
    if (colon != std::string::npos) {
      out.push_back(
          ThreadRef{Pid{std::stoi(item.substr(0, colon))}, Tid{std::stoi(item.substr(colon + 1))}});
    }
    pos = end + 1;
  }
  return out;
}

/// A prepared statement, finalized on every path.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  [[nodiscard]] bool ok() const { return rc_ == SQLITE_OK; }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bindNull(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  int step() { return sqlite3_step(stmt_); }
  [[nodiscard]] std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  [[nodiscard]] bool isNull(int col) const {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
  }
  [[nodiscard]] std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

constexpr const char* kColumns =
    "id, kind, state, pid, process_start_time, process_name, target, signature, threads, spurs, "
    "opened_at_ns, updated_at_ns, resolved_at_ns, resolution, summary, chains, evidence, ";

/// The columns read back; a store still at schema version 1 (read-only, written by an older
/// service) has no processes column.
std::string selectColumns(int schema_version) {
  return std::string(kColumns) + (schema_version >= 2 ? "processes" : "'' AS processes");
}

/// Binds the incident's fields to ?1..?17 in the order of kColumns without the id.
void bindIncident(Statement& s, const Incident& i) {
  s.bind(1, std::string(toString(i.kind)))
      .bind(2, std::string(toString(i.state)))
      .bind(3, static_cast<std::int64_t>(i.process.pid.value))
      .bind(4, static_cast<std::int64_t>(i.process.start_time))
      .bind(5, i.process_name)
      .bind(6, i.target)
      .bind(7, i.signature)
      .bind(8, threadList(i.threads))
      .bind(9, threadList(i.spurs))
      .bind(10, toNs(i.opened_at))
      .bind(11, toNs(i.updated_at));
  if (i.resolved_at) {
    s.bind(12, toNs(*i.resolved_at));
  } else {
    s.bindNull(12);
  }
  s.bind(13, i.resolution)
      .bind(14, i.summary)
      .bind(15, rpc::chainsToJson(i.chains))
      .bind(16, rpc::capturesToJson(i.evidence))
      .bind(17, rpc::processesToJson(i.processes));
}

Incident readIncident(const Statement& s) {
  Incident i;
  i.id = s.integer(0);
  i.kind = s.text(1) == "hang" ? IncidentKind::kHang : IncidentKind::kDeadlock;
  i.state = s.text(2) == "resolved" ? IncidentState::kResolved : IncidentState::kOpen;
  i.process = ProcessIdentity{Pid{static_cast<std::int32_t>(s.integer(3))},
                              static_cast<std::uint64_t>(s.integer(4))};
  i.process_name = s.text(5);
  i.target = s.text(6);
  i.signature = s.text(7);
  i.threads = threadsFromText(s.text(8));
  i.spurs = threadsFromText(s.text(9));
  i.opened_at = fromNs(s.integer(10));
  i.updated_at = fromNs(s.integer(11));
  if (!s.isNull(12)) i.resolved_at = fromNs(s.integer(12));
  i.resolution = s.text(13);
  i.summary = s.text(14);
  if (auto chains = rpc::chainsFromJson(s.text(15))) i.chains = std::move(chains).value();
  if (auto evidence = rpc::capturesFromJson(s.text(16))) i.evidence = std::move(evidence).value();
  if (auto processes = rpc::processesFromJson(s.text(17)); processes && !processes->empty()) {
    i.processes = std::move(processes).value();
  } else {
    i.processes = {IncidentProcess{i.process, i.process_name}};
  }
  return i;
}

}  // namespace

Result<std::unique_ptr<IncidentStore>> IncidentStore::open(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    return makeError(ErrorCode::kIo, "cannot create the directory " + file.parent_path().string() +
                                         " of the incident store: " + ec.message());
  }
  // A reader must never find a store half made (a file without its tables, or a version table
  // without its version): a new store is built whole under another name and linked in place.
  if (std::filesystem::symlink_status(file, ec).type() == std::filesystem::file_type::not_found) {
    if (auto created = create(file); !created) return created.error();
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqliteReason(db, rc);
    sqlite3_close(db);
    return makeError(ErrorCode::kIo,
                     "cannot open the incident store " + file.string() + ": " + message);
  }
  std::unique_ptr<IncidentStore> store(new IncidentStore(db));
  sqlite3_busy_timeout(db, 5000);
  // WAL: readers (wctmon incidents) never block the service; FULL: a committed incident is on
  // disk before the call returns.
  if (auto s = store->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"); !s)
    return s.error();
  if (auto s = store->migrate(); !s) return s.error();
  return store;
}

Status IncidentStore::create(const std::filesystem::path& file) {
  const std::string building = file.string() + ".new";
  // Whatever a crash in the middle of a previous build left.
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    ::unlink((building + suffix).c_str());
  }
  {
    sqlite3* db = nullptr;
    const int rc =
        sqlite3_open_v2(building.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
      std::string message = sqliteReason(db, rc);
      sqlite3_close(db);
      return makeError(ErrorCode::kIo,
                       "cannot create the incident store " + building + ": " + message);
    }
    // Built in WAL mode, so that the store is born in the mode it is used in: switching later
    // would rewrite its first page under a reader. Closing this, the only connection, folds the
    // log into the file and removes it. Nobody sees the file before it is linked, so it is synced
    // once, below, rather than at every step.
    IncidentStore store(db);
    if (auto s = store.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"); !s) return s;
    if (auto s = store.migrate(); !s) return s;
  }
  if (const int fd = ::open(building.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  // link() rather than rename(): a store that appeared meanwhile is kept, never replaced.
  int error = ::link(building.c_str(), file.c_str()) == 0 ? 0 : errno;
  if (error == EPERM || error == EOPNOTSUPP) {  // a file system without hard links
    error = ::rename(building.c_str(), file.c_str()) == 0 ? 0 : errno;
  }
  ::unlink(building.c_str());
  if (error != 0 && error != EEXIST) {
    return makeError(ErrorCode::kIo, "cannot create the incident store " + file.string() + ": " +
                                         std::generic_category().message(error));
  }
  // The name is durable once its directory is.
  if (const int dir = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return std::monostate{};
}

Result<std::unique_ptr<IncidentStore>> IncidentStore::openReadOnly(
    const std::filesystem::path& file) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) {
      return makeError(ErrorCode::kIo, "no incident store at " + file.string() + ": " +
                                           ec.message() +
                                           " (the service creates it when it first starts)");
    }
    if (ec == std::errc::not_a_directory) {
      for (auto dir = file.parent_path(); dir.has_relative_path(); dir = dir.parent_path()) {
        std::error_code ignored;
        const auto s = std::filesystem::status(dir, ignored);
        if (std::filesystem::exists(s) && !std::filesystem::is_directory(s)) {
          return makeError(ErrorCode::kIo, "no incident store at " + file.string() + ": " +
                                               dir.string() + " is a file, not a directory");
        }
      }
    }
    return makeError(ErrorCode::kIo,
                     "cannot read the incident store " + file.string() + ": " + ec.message());
  }
  if (std::filesystem::is_directory(status)) {
    return makeError(ErrorCode::kInvalidArgument,
                     file.string() + " is a directory, not a wctmon incident store");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return makeError(ErrorCode::kInvalidArgument,
                     file.string() + " is not a regular file, not a wctmon incident store");
  }
  // A WAL reader maps the -shm index and opens the -wal log, creating both when they are absent
  // and, unable to checkpoint, leaving them behind; in a read-only directory it cannot create
  // them and fails. Without a -wal file no writer is at work (the service's connection keeps one
  // from its first read until it closes, and a clean close folds it into the file): everything
  // committed is in the file, read as immutable, which creates and locks nothing. With one, the
  // service runs (or was killed): its -wal and -shm are there to read through, read-only.
  // A service that stops between the check and the open leaves a window in which a reader
  // recreates them; the next open of the service removes them again.
  const bool log_present = std::filesystem::exists(file.string() + "-wal", ec);
  const std::string uri = fileUri(file, log_present ? "mode=ro" : "immutable=1");
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqliteReason(db, rc);
    sqlite3_close(db);
    return makeError(ErrorCode::kIo,
                     "cannot open the incident store " + file.string() + ": " + message);
  }
  std::unique_ptr<IncidentStore> store(new IncidentStore(db));
  sqlite3_busy_timeout(db, 5000);
  {
    Statement tables(db, "SELECT count(*) FROM sqlite_master");
    if (!tables.ok() || tables.step() != SQLITE_ROW) {
      if (sqlite3_errcode(db) == SQLITE_NOTADB) {
        return makeError(ErrorCode::kInvalidArgument,
                         file.string() + " is not a wctmon incident store: " + sqlite3_errmsg(db));
      }
      return makeError(ErrorCode::kIo, "cannot read the incident store " + file.string() + ": " +
                                           sqliteReason(db, sqlite3_errcode(db)));
    }
    // The service never shows a store without its tables (see create()); an empty file is not
    // one yet.
    if (tables.integer(0) == 0) {
      return makeError(ErrorCode::kIo,
                       "no incident store at " + file.string() + " yet: the file holds no tables");
    }
  }
  Statement version(db, "SELECT version FROM schema_version");
  if (!version.ok() || version.step() != SQLITE_ROW) {
    return makeError(ErrorCode::kInvalidArgument,
                     file.string() + " is not a wctmon incident store: it has no schema version");
  }
  store->schema_version_ = static_cast<int>(version.integer(0));
  if (store->schema_version_ > kSchemaVersion) {
    return makeError(ErrorCode::kUnsupported, file.string() + " has schema version " +
                                                  std::to_string(store->schema_version_) +
                                                  ", newer than this wctmon understands (" +
                                                  std::to_string(kSchemaVersion) + ")");
  }
  return store;
}

IncidentStore::~IncidentStore() { sqlite3_close(db_); }

Error IncidentStore::sqlError(const std::string& what) const {
  return makeError(ErrorCode::kIo, what + ": " + sqlite3_errmsg(db_));
}

Status IncidentStore::exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    return makeError(ErrorCode::kIo, "incident store: " + text);
  }
  return std::monostate{};
}

Status IncidentStore::migrate() {
  // Every pending step and the version row in one transaction: a reader sees the store as it
  // was or as it is now, never a version table without its version.
  if (auto s = exec("BEGIN IMMEDIATE"); !s) return s;
  auto step = exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);");
  int version = 0;
  if (step) {
    Statement current(db_, "SELECT version FROM schema_version");
    if (current.ok() && current.step() == SQLITE_ROW)
      version = static_cast<int>(current.integer(0));
  }
  if (step && version > kSchemaVersion) {
    step = makeError(ErrorCode::kUnsupported,
                     "the incident store has schema version " + std::to_string(version) +
                         ", newer than this wctmon (" + std::to_string(kSchemaVersion) + ")");
  }
  const int from = version;
  while (step && version < kSchemaVersion) {
    step = exec(kMigrations[version]);
    ++version;
  }
  if (step && version != from) {
    const std::string set =
        from == 0 ? "INSERT INTO schema_version VALUES (" + std::to_string(version) + ")"
                  : "UPDATE schema_version SET version = " + std::to_string(version);
    step = exec(set.c_str());
  }
  if (!step) {
    (void)exec("ROLLBACK");
    return step;
  }
  if (auto s = exec("COMMIT"); !s) return s;
  schema_version_ = version;
  return std::monostate{};
}

Result<std::int64_t> IncidentStore::insert(const Incident& incident) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "INSERT INTO incidents (kind, state, pid, process_start_time, process_name, target, "
              "signature, threads, spurs, opened_at_ns, updated_at_ns, resolved_at_ns, resolution, "
              "summary, chains, evidence, processes, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
              "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
  if (!s.ok()) return sqlError("cannot store an incident");
  bindIncident(s, incident);
  // NULL lets SQLite choose the next id.
  if (incident.id != 0) s.bind(18, incident.id);
  if (s.step() != SQLITE_DONE) return sqlError("cannot store an incident");
  return sqlite3_last_insert_rowid(db_);
}

Result<std::int64_t> IncidentStore::lastId() {
  std::lock_guard lock(mutex_);
  if (schema_version_ == 0) return std::int64_t{0};
  // AUTOINCREMENT keeps the highest id ever given in sqlite_sequence, across deletions.
  Statement s(db_, "SELECT seq FROM sqlite_sequence WHERE name = 'incidents'");
  if (!s.ok()) return sqlError("cannot read the last incident id");
  const int step = s.step();
  if (step == SQLITE_DONE) return std::int64_t{0};
  if (step != SQLITE_ROW) return sqlError("cannot read the last incident id");
  return s.integer(0);
}

Status IncidentStore::update(const Incident& incident) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "UPDATE incidents SET kind = ?1, state = ?2, pid = ?3, process_start_time = ?4, "
              "process_name = ?5, target = ?6, signature = ?7, threads = ?8, spurs = ?9, "
              "opened_at_ns = ?10, updated_at_ns = ?11, resolved_at_ns = ?12, resolution = ?13, "
              "summary = ?14, chains = ?15, evidence = ?16, processes = ?17 WHERE id = ?18");
  if (!s.ok()) return sqlError("cannot update incident " + std::to_string(incident.id));
  bindIncident(s, incident);
  s.bind(18, incident.id);
  if (s.step() != SQLITE_DONE)
    return sqlError("cannot update incident " + std::to_string(incident.id));
  if (sqlite3_changes(db_) == 0) {
    return makeError(ErrorCode::kInvalidArgument, "no incident " + std::to_string(incident.id));
  }
  return std::monostate{};
}

Result<std::vector<Incident>> IncidentStore::list(const IncidentQuery& query) {
  std::lock_guard lock(mutex_);
  if (schema_version_ == 0) return std::vector<Incident>{};  // not created yet
  std::string sql = "SELECT " + selectColumns(schema_version_) + " FROM incidents WHERE 1 = 1";
  if (query.state) sql += " AND state = ?1";
  if (query.process) sql += " AND pid = ?2 AND process_start_time = ?3";
  sql += " ORDER BY opened_at_ns DESC, id DESC";
  if (query.limit > 0) sql += " LIMIT " + std::to_string(query.limit);
  Statement s(db_, sql.c_str());
  if (!s.ok()) return sqlError("cannot list incidents");
  if (query.state) s.bind(1, std::string(toString(*query.state)));
  if (query.process) {
    s.bind(2, static_cast<std::int64_t>(query.process->pid.value));
    s.bind(3, static_cast<std::int64_t>(query.process->start_time));
  }
  std::vector<Incident> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(readIncident(s));
  if (rc != SQLITE_DONE) return sqlError("cannot list incidents");
  return out;
}

Result<std::optional<Incident>> IncidentStore::get(std::int64_t id) {
  std::lock_guard lock(mutex_);
  const std::string sql =
      "SELECT " + selectColumns(schema_version_) + " FROM incidents WHERE id = ?1";
  Statement s(db_, sql.c_str());
  if (!s.ok()) return sqlError("cannot read incident " + std::to_string(id));
  s.bind(1, id);
  const int rc = s.step();
  if (rc == SQLITE_ROW) return std::optional<Incident>(readIncident(s));
  if (rc == SQLITE_DONE) return std::optional<Incident>();
  return sqlError("cannot read incident " + std::to_string(id));
}

Result<std::size_t> IncidentStore::applyRetention(std::chrono::system_clock::time_point now,
                                                  std::chrono::hours max_age,
                                                  std::size_t max_count) {
  std::lock_guard lock(mutex_);
  std::size_t removed = 0;
  {
    Statement old(db_, "DELETE FROM incidents WHERE state = 'resolved' AND resolved_at_ns < ?1");
    old.bind(1, toNs(now - max_age));
    if (!old.ok() || old.step() != SQLITE_DONE) return sqlError("cannot apply retention");
    removed += static_cast<std::size_t>(sqlite3_changes(db_));
  }
  {
    // Beyond the count, the oldest resolved incidents go first; open ones are never dropped.
    Statement excess(db_,
                     "DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE state = "
                     "'resolved' ORDER BY opened_at_ns ASC, id ASC LIMIT MAX(0, (SELECT COUNT(*) "
                     "FROM incidents) - ?1))");
    excess.bind(1, static_cast<std::int64_t>(max_count));
    if (!excess.ok() || excess.step() != SQLITE_DONE) return sqlError("cannot apply retention");
    removed += static_cast<std::size_t>(sqlite3_changes(db_));
  }
  return removed;
}

Status IncidentStore::putTarget(const TargetConfig& target) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "INSERT INTO targets (name, spec, created_at_ns) VALUES (?1, ?2, ?3) "
              "ON CONFLICT(name) DO UPDATE SET spec = excluded.spec");
  if (!s.ok()) return sqlError("cannot store target " + target.name);
  s.bind(1, target.name)
      .bind(2, targetToJson(target))
      .bind(3, toNs(std::chrono::system_clock::now()));
  if (s.step() != SQLITE_DONE) return sqlError("cannot store target " + target.name);
  return std::monostate{};
}

Result<bool> IncidentStore::removeTarget(const std::string& name) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "DELETE FROM targets WHERE name = ?1");
  if (!s.ok()) return sqlError("cannot remove target " + name);
  s.bind(1, name);
  if (s.step() != SQLITE_DONE) return sqlError("cannot remove target " + name);
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<TargetConfig>> IncidentStore::targets(const Config& defaults) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT name, spec FROM targets ORDER BY created_at_ns, name");
  if (!s.ok()) return sqlError("cannot read targets");
  std::vector<TargetConfig> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    std::vector<ConfigError> errors;
    if (auto target = parseTarget(s.text(1), defaults, errors)) out.push_back(std::move(*target));
  }
  if (rc != SQLITE_DONE) return sqlError("cannot read targets");
  return out;
}

}  // namespace wctmon
