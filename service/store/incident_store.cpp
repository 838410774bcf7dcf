#include "store/incident_store.h"

#include <google/protobuf/util/json_util.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <system_error>

#include "model/calendar.h"
#include "model/format.h"
#include "store/durable_file.h"
#include "store/held_file.h"
#include "wire/proto_convert.h"

namespace wctmon {
namespace {

Status convertDetailsToBinary(sqlite3* db, const std::string& file);

/// One schema step: its SQL, then, when set, what SQL cannot do (converting rows), in the same
/// transaction.
struct Migration {
  const char* sql;
  Status (*convert)(sqlite3* db, const std::string& file) = nullptr;
};

/// Schema steps, applied in order inside one transaction; step i brings the schema to version
/// i + 1. Never edit a released step: add one.
const Migration kMigrations[] = {
    {R"sql(
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
)sql"},
    // Every process of an incident (a deadlock across processes is one incident), as the proto3
    // JSON of its IncidentProcess list; empty for incidents stored before: their one process.
    {R"sql(
ALTER TABLE incidents ADD COLUMN processes TEXT NOT NULL DEFAULT '';
)sql"},
    // An incident's processes, chains and evidence as one binary wctmon.v1.Incident that holds
    // only those fields: the proto3 JSON of the three columns before, put together as the JSON of
    // that message, is converted row by row; a row whose JSON does not parse keeps it as text,
    // and readers report that row rather than drop it.
    {R"sql(
ALTER TABLE incidents ADD COLUMN detail BLOB NOT NULL DEFAULT x'';
UPDATE incidents SET detail = '{"processes":' || CASE processes WHEN '' THEN '[]' ELSE processes END
  || ',"chains":' || chains || ',"evidence":' || evidence || '}';
ALTER TABLE incidents DROP COLUMN chains;
ALTER TABLE incidents DROP COLUMN evidence;
ALTER TABLE incidents DROP COLUMN processes;
)sql",
     &convertDetailsToBinary},
};

static_assert(std::size(kMigrations) == IncidentStore::kSchemaVersion);

/// A path as SQLite takes it: UTF-8 on every platform (path.string() is the ANSI code page on
/// Windows).
std::string sqlitePath(const std::filesystem::path& path) {
  const auto text = path.u8string();
  return {text.begin(), text.end()};
}

/// The "file:" URI of `path` with `query`: bytes that URIs reserve are percent-encoded.
std::string fileUri(const std::filesystem::path& path, const std::string& query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  // Forward slashes, and a drive ("C:/...") after a slash, as SQLite's URIs have it on Windows.
  std::string uri = path.has_root_name() ? "file:/" : "file:";
  const auto generic = path.generic_u8string();
  for (const auto u : generic) {
    const char c = static_cast<char>(u);
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

/// What a failed SQLite call means for the caller: the disk or the file (full, unreadable,
/// damaged, locked), a write that breaks a rule of the schema (an id taken), or a mistake of
/// this code (SQL that does not prepare).
ErrorCode errorCode(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
      return ErrorCode::kInvalidArgument;
    case SQLITE_ERROR:
    case SQLITE_INTERNAL:
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_NOMEM:
      return ErrorCode::kInternal;
    default:
      return ErrorCode::kIo;
  }
}

/// "FILE: WHAT: REASON" for the last failure on `db`.
Error sqlFailure(sqlite3* db, const std::string& file, const std::string& what) {
  const int rc = sqlite3_extended_errcode(db);
  return makeError(errorCode(rc), file + ": " + what + ": " + sqliteReason(db, rc));
}

std::int64_t toNs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point fromNs(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

/// What threadList wrote ("1:2 1:3"); false when the text is not that.
bool threadsFromText(const std::string& text, std::vector<ThreadRef>& out) {
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    int pid = 0;
    int tid = 0;
    auto r = std::from_chars(p, end, pid);
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != ':') return false;
    r = std::from_chars(r.ptr + 1, end, tid);
    if (r.ec != std::errc() || (r.ptr != end && *r.ptr != ' ')) return false;
    out.push_back(ThreadRef{Pid{pid}, Tid{tid}});
    p = r.ptr == end ? end : r.ptr + 1;
  }
  return true;
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
  Statement& bindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bindNull(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  int step() { return sqlite3_step(stmt_); }
  [[nodiscard]] std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  [[nodiscard]] int type(int col) const { return sqlite3_column_type(stmt_, col); }
  [[nodiscard]] bool isNull(int col) const { return type(col) == SQLITE_NULL; }
  [[nodiscard]] std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p));
  }
  /// The bytes of a blob (or text) column, valid until the next step.
  [[nodiscard]] std::string_view bytes(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    return p == nullptr
               ? std::string_view()
               : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

constexpr const char* kColumns =
    "id, kind, state, pid, process_start_time, process_name, target, signature, threads, spurs, "
    "opened_at_ns, updated_at_ns, resolved_at_ns, resolution, summary, ";

/// The columns read back. A store still at schema version 1 or 2 (read-only, written by an older
/// service) keeps the processes (from version 2), chains and evidence as proto3 JSON in columns
/// of their own: they are read as the JSON of the one message version 3 keeps.
std::string selectColumns(int schema_version) {
  if (schema_version >= 3) return std::string(kColumns) + "detail";
  const std::string processes =
      schema_version >= 2 ? "CASE processes WHEN '' THEN '[]' ELSE processes END" : "'[]'";
  return std::string(kColumns) + "'{\"processes\":' || " + processes +
         " || ',\"chains\":' || chains || ',\"evidence\":' || evidence || '}' AS detail";
}

/// The processes, chains and evidence of `i` as a wctmon.v1.Incident that holds only those, in
/// binary.
std::string detailOf(const Incident& i) {
  v1::Incident detail;
  for (const auto& p : i.processes) *detail.add_processes() = wire::toProto(p);
  for (const auto& c : i.chains) *detail.add_chains() = wire::toProto(c);
  for (const auto& e : i.evidence) *detail.add_evidence() = wire::toProto(e);
  return detail.SerializeAsString();
}

/// Reads the JSON an older schema kept (see selectColumns and the migration to version 3).
google::protobuf::util::Status detailFromJson(std::string_view json, v1::Incident& detail) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  return google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &detail, options);
}

/// Binds the incident's fields to ?1..?15 in the order of kColumns without the id, then detail.
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
  s.bind(13, i.resolution).bind(14, i.summary).bindBlob(15, detailOf(i));
}

/// The incident of the current row, or why it cannot be read (without the file or id).
Result<Incident> readIncident(const Statement& s) {
  Incident i;
  i.id = s.integer(0);
  i.kind = s.text(1) == "hang" ? IncidentKind::kHang : IncidentKind::kDeadlock;
  i.state = s.text(2) == "resolved" ? IncidentState::kResolved : IncidentState::kOpen;
  i.process = ProcessIdentity{Pid{static_cast<std::int32_t>(s.integer(3))},
                              static_cast<std::uint64_t>(s.integer(4))};
  i.process_name = s.text(5);
  i.target = s.text(6);
  i.signature = s.text(7);
  if (!threadsFromText(s.text(8), i.threads) || !threadsFromText(s.text(9), i.spurs)) {
    return makeError(ErrorCode::kIo, "its threads are not a list of pid:tid");
  }
  i.opened_at = fromNs(s.integer(10));
  i.updated_at = fromNs(s.integer(11));
  if (!s.isNull(12)) i.resolved_at = fromNs(s.integer(12));
  i.resolution = s.text(13);
  i.summary = s.text(14);
  v1::Incident detail;
  // The type first: reading a value as bytes may convert it.
  const int type = s.type(15);
  if (type == SQLITE_TEXT) {
    // Kept by an older schema, or left as it was by the migration because it did not parse.
    if (auto parsed = detailFromJson(s.bytes(15), detail); !parsed.ok()) {
      // The parser's first line; the next ones quote the JSON around the error.
      const std::string reason(parsed.message());
      return makeError(ErrorCode::kIo,
                       "its processes, chains and evidence are JSON of an older store that does "
                       "not parse (" +
                           reason.substr(0, reason.find('\n')) + ")");
    }
  } else {
    const auto blob = type == SQLITE_BLOB ? s.bytes(15) : std::string_view();
    if (type != SQLITE_BLOB || !detail.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      return makeError(ErrorCode::kIo,
                       "its processes, chains and evidence do not parse as a wctmon.v1.Incident");
    }
  }
  i.processes.reserve(static_cast<std::size_t>(detail.processes_size()));
  for (const auto& p : detail.processes()) i.processes.push_back(wire::fromProto(p));
  if (i.processes.empty()) i.processes = {IncidentProcess{i.process, i.process_name}};
  i.chains.reserve(static_cast<std::size_t>(detail.chains_size()));
  for (const auto& c : detail.chains()) i.chains.push_back(wire::fromProto(c));
  i.evidence.reserve(static_cast<std::size_t>(detail.evidence_size()));
  for (const auto& e : detail.evidence()) i.evidence.push_back(wire::fromProto(e));
  return i;
}

/// The migration to version 3, after its SQL: each row's JSON becomes the binary message. A row
/// whose JSON does not parse keeps it (readers say so, naming the row), so that one damaged
/// record neither blocks the upgrade nor disappears.
Status convertDetailsToBinary(sqlite3* db, const std::string& file) {
  std::vector<std::int64_t> ids;
  {
    Statement rows(db, "SELECT id FROM incidents WHERE typeof(detail) = 'text'");
    if (!rows.ok()) return sqlFailure(db, file, "cannot convert incidents to schema version 3");
    int rc;
    while ((rc = rows.step()) == SQLITE_ROW) ids.push_back(rows.integer(0));
    if (rc != SQLITE_DONE)
      return sqlFailure(db, file, "cannot convert incidents to schema version 3");
  }
  for (const auto id : ids) {
    const auto what = "cannot convert incident " + std::to_string(id) + " to schema version 3";
    Statement read(db, "SELECT detail FROM incidents WHERE id = ?1");
    if (!read.ok() || read.bind(1, id).step() != SQLITE_ROW) return sqlFailure(db, file, what);
    v1::Incident detail;
    if (!detailFromJson(read.bytes(0), detail).ok()) continue;
    Statement write(db, "UPDATE incidents SET detail = ?1 WHERE id = ?2");
    if (!write.ok() ||
        write.bindBlob(1, detail.SerializeAsString()).bind(2, id).step() != SQLITE_DONE) {
      return sqlFailure(db, file, what);
    }
  }
  return std::monostate{};
}

/// "FILE: 2 stored incidents cannot be read and are left out (ids 12, 17): incident 12: REASON".
std::string unreadableWarning(const std::string& file, const std::vector<std::int64_t>& ids,
                              const std::string& first_reason) {
  constexpr std::size_t kShown = 10;
  std::string out = file + ": " + std::to_string(ids.size()) + " stored incident" +
                    (ids.size() == 1 ? "" : "s") + " cannot be read and " +
                    (ids.size() == 1 ? "is" : "are") + " left out (id" +
                    (ids.size() == 1 ? " " : "s ");
  for (std::size_t k = 0; k < ids.size() && k < kShown; ++k) {
    out += (k == 0 ? "" : ", ") + std::to_string(ids[k]);
  }
  if (ids.size() > kShown) out += " and " + std::to_string(ids.size() - kShown) + " more";
  return out + "): incident " + std::to_string(ids.front()) + ": " + first_reason;
}

}  // namespace

IncidentStore::IncidentStore(sqlite3* db, std::string file) : db_(db), file_(std::move(file)) {}

Result<std::unique_ptr<IncidentStore>> IncidentStore::open(const std::filesystem::path& file) {
  bool damaged = false;
  return openChecked(file, damaged);
}

namespace {

/// Whether SQLite's result code says the file itself is damaged (rather than unreachable, locked,
/// full or refused).
bool isDamage(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

/// "20261125T162500Z".
std::string utcStamp(std::chrono::system_clock::time_point now) {
  const std::tm tm = utcCalendar(std::chrono::system_clock::to_time_t(now));
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

}  // namespace

Result<std::unique_ptr<IncidentStore>> IncidentStore::openChecked(const std::filesystem::path& file,
                                                                  bool& damaged) {
  damaged = false;
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
  const int rc = sqlite3_open_v2(sqlitePath(file).c_str(), &db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqliteReason(db, rc);
    sqlite3_close(db);
    return makeError(ErrorCode::kIo,
                     "cannot open the incident store " + file.string() + ": " + message);
  }
  std::unique_ptr<IncidentStore> store(new IncidentStore(db, file.string()));
  sqlite3_busy_timeout(db, 5000);
  // WAL: readers (wctmon incidents) never block the service; FULL: a committed incident is on
  // disk before the call returns. The log is folded into the file every 8 pages (SQLite's
  // default is 1,000: 4 MiB) and kept at most 32 KiB long: otherwise, on a small disk, the log
  // alone takes the space, and a full disk leaves no room to fold it. Incidents are written a
  // few times a second at most: the extra fsync of a fold is cheap here.
  if (auto s = store->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                           "PRAGMA wal_autocheckpoint=8; PRAGMA journal_size_limit=32768;",
                           "cannot open the incident store");
      !s) {
    damaged = isDamage(store->last_failure_);
    return s.error();
  }
  if (auto s = store->migrate(); !s) {
    damaged = isDamage(store->last_failure_);
    return s.error();
  }
  if (auto s = store->checkTables(); !s) {
    // A table of the schema gone is damage too: every write of it would fail.
    damaged = s.error().code == ErrorCode::kInvalidArgument;
    return s.error();
  }
  // A damaged page of the incidents is found now, not by the write that needs it (which would
  // fail, one incident after another). quick_check reads every page but checks no index against
  // its table: measured here at 35-70 ms for 1,000 to 10,000 incidents of 4.7 KB (5-49 MB)
  // and 130-170 ms for 10,000 of 2 KB (41 MB; 10,000 is the default retention's most), once, at
  // start.
  {
    Statement check(db, "PRAGMA quick_check(1)");
    if (!check.ok()) {
      damaged = isDamage(sqlite3_extended_errcode(db));
      return store->sqlError("cannot check the incident store");
    }
    const int step = check.step();
    if (step != SQLITE_ROW) {
      damaged = isDamage(sqlite3_extended_errcode(db));
      return store->sqlError("cannot check the incident store");
    }
    if (const auto result = check.text(0); result != "ok") {
      damaged = true;
      return makeError(ErrorCode::kIo,
                       "the incident store " + file.string() + " is damaged: " + result);
    }
  }
  store->held_ = HeldFile::open(file);
  return store;
}

Result<IncidentStore::Opened> IncidentStore::openOrMoveAside(
    const std::filesystem::path& file, std::chrono::system_clock::time_point now) {
  bool damaged = false;
  auto first = openChecked(file, damaged);
  if (first) return Opened{std::move(first).value(), std::nullopt};
  if (!damaged) return first.error();
  // The connection that found the damage is closed by now: nothing of it holds the file.
  auto aside = file;
  aside += ".corrupt-" + utcStamp(now);
  std::error_code ec;
  for (int n = 2; std::filesystem::exists(aside, ec); ++n) {
    aside = file;
    aside += ".corrupt-" + utcStamp(now) + "-" + std::to_string(n);
  }
  std::filesystem::rename(file, aside, ec);
  if (ec) {
    return makeError(ErrorCode::kIo, first.error().message + "; it cannot be moved aside to " +
                                         aside.string() + ": " + ec.message());
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    auto from = file;
    from += suffix;
    auto to = aside;
    to += suffix;
    std::error_code ignored;
    if (std::filesystem::exists(from, ignored)) std::filesystem::rename(from, to, ignored);
  }
  syncDirectory(file.parent_path());
  auto fresh = open(file);
  if (!fresh) return fresh.error();
  return Opened{std::move(fresh).value(), MovedAside{aside, first.error().message}};
}

Result<std::string> IncidentStore::ensureCurrent() {
  std::lock_guard lock(mutex_);
  if (held_ == nullptr) {
    // Not held (it could not be opened at start, or a new one could not be made last time).
    if (db_ != nullptr) return std::string();
  } else if (auto why = held_->whyNotAtItsPath(); why.empty()) {
    return std::string();
  } else {
    // What its log holds goes into the file that went (it may have been moved, not deleted),
    // and the log is emptied: SQLite does not fold the log of a file that moved when it closes
    // it, and would read that log, left at the path, as the new file's.
    (void)sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    // From now on nothing goes into the lost file, even when a new one cannot be made yet.
    sqlite3_close(db_);
    db_ = nullptr;
    held_.reset();
    for (const char* suffix : {"-wal", "-shm"}) {
      std::error_code ignored;
      std::filesystem::remove(file_ + suffix, ignored);
    }
    lost_ = why;
  }
  bool damaged = false;
  auto fresh = openChecked(file_, damaged);
  if (!fresh) {
    return makeError(
        fresh.error().code,
        file_ + ": " + lost_ + ", and a new store cannot be made there: " + fresh.error().message);
  }
  db_ = std::exchange((*fresh)->db_, nullptr);
  held_ = std::move((*fresh)->held_);
  schema_version_ = (*fresh)->schema_version_;
  return file_ + ": " + std::exchange(lost_, std::string());
}

Status IncidentStore::create(const std::filesystem::path& file) {
  auto building = file;
  building += ".new";
  std::error_code ignored;
  // Whatever a crash in the middle of a previous build left.
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    auto left = building;
    left += suffix;
    std::filesystem::remove(left, ignored);
  }
  {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(sqlitePath(building).c_str(), &db,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
      std::string message = sqliteReason(db, rc);
      sqlite3_close(db);
      return makeError(ErrorCode::kIo,
                       "cannot create the incident store " + building.string() + ": " + message);
    }
    // Built in WAL mode, so that the store is born in the mode it is used in: switching later
    // would rewrite its first page under a reader. Closing this, the only connection, folds the
    // log into the file and removes it. Nobody sees the file before it is linked, so it is synced
    // once, below, rather than at every step.
    IncidentStore store(db, building.string());
    if (auto s = store.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;",
                            "cannot create the incident store");
        !s) {
      return s;
    }
    if (auto s = store.migrate(); !s) return s;
  }
  syncFile(building);
  const auto error = linkNoReplace(building, file);
  std::filesystem::remove(building, ignored);
  if (error && error != std::errc::file_exists) {
    return makeError(ErrorCode::kIo,
                     "cannot create the incident store " + file.string() + ": " + error.message());
  }
  // The name is durable once its directory is.
  syncDirectory(file.parent_path());
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
  std::unique_ptr<IncidentStore> store(new IncidentStore(db, file.string()));
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
  if (auto s = store->checkTables(); !s) return s.error();
  return store;
}

Status IncidentStore::checkTables() const {
  // A table of the schema gone (dropped by hand, a file put together from pieces): every read or
  // write of it would fail later, one incident after another. Said once, now, with what to do.
  for (const char* table : {"incidents", "targets"}) {
    Statement found(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    if (!found.ok()) return sqlError("cannot read the incident store's schema");
    found.bind(1, std::string(table));
    if (found.step() != SQLITE_ROW) {
      return makeError(ErrorCode::kInvalidArgument,
                       "the incident store " + file_ + " is damaged: its table " + table +
                           " is missing; move the file aside (a new store is made at the next "
                           "start) or restore it from a backup");
    }
  }
  return std::monostate{};
}

IncidentStore::~IncidentStore() {
  // Before the held file (see HeldFile's destructor).
  sqlite3_close(db_);
}

Error IncidentStore::sqlError(const std::string& what) const {
  last_failure_ = sqlite3_extended_errcode(db_);
  return sqlFailure(db_, file_, what);
}

Error IncidentStore::lostError(const std::string& what) const {
  return makeError(ErrorCode::kIo, file_ + ": " + what + ": " + lost_ +
                                       ", and no new store could be made there yet");
}

template <typename Step>
auto IncidentStore::retryWhenFull(Step step) -> decltype(step()) {
  last_failure_ = 0;
  auto done = step();
  if (done || (last_failure_ & 0xff) != SQLITE_FULL) return done;
  // Passive: it waits for no reader. Once every frame is in the file, the next write starts the
  // log again from its beginning, in the space it already has.
  int log_frames = 0;
  int checkpointed = 0;
  if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames,
                                &checkpointed) != SQLITE_OK ||
      checkpointed < log_frames) {
    return done;
  }
  return step();
}

Status IncidentStore::exec(const char* sql, const std::string& what) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    last_failure_ = sqlite3_extended_errcode(db_);
    std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return makeError(errorCode(sqlite3_extended_errcode(db_)), file_ + ": " + what + ": " + text);
  }
  return std::monostate{};
}

Status IncidentStore::migrate() {
  // Every pending step and the version row in one transaction: a reader sees the store as it
  // was or as it is now, never a version table without its version.
  const std::string what =
      "cannot bring the incident store to schema version " + std::to_string(kSchemaVersion);
  if (auto s = exec("BEGIN IMMEDIATE", what); !s) return s;
  auto step = exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);", what);
  int version = 0;
  if (step) {
    Statement current(db_, "SELECT version FROM schema_version");
    if (current.ok() && current.step() == SQLITE_ROW)
      version = static_cast<int>(current.integer(0));
  }
  if (step && version > kSchemaVersion) {
    step = makeError(ErrorCode::kUnsupported, file_ + " has schema version " +
                                                  std::to_string(version) +
                                                  ", newer than this wctmon understands (" +
                                                  std::to_string(kSchemaVersion) + ")");
  }
  const int from = version;
  while (step && version < kSchemaVersion) {
    const auto& migration = kMigrations[version];
    step = exec(migration.sql, what);
    if (step && migration.convert != nullptr) step = migration.convert(db_, file_);
    ++version;
  }
  if (step && version != from) {
    const std::string set =
        from == 0 ? "INSERT INTO schema_version VALUES (" + std::to_string(version) + ")"
                  : "UPDATE schema_version SET version = " + std::to_string(version);
    step = exec(set.c_str(), what);
  }
  if (!step) {
    (void)exec("ROLLBACK", what);
    return step;
  }
  if (auto s = exec("COMMIT", what); !s) return s;
  schema_version_ = version;
  return std::monostate{};
}

Result<std::int64_t> IncidentStore::insert(const Incident& incident) {
  std::lock_guard lock(mutex_);
  const std::string what = incident.id != 0 ? "cannot store incident " + std::to_string(incident.id)
                                            : std::string("cannot store a new incident");
  if (db_ == nullptr) return lostError(what);
  return retryWhenFull([&]() -> Result<std::int64_t> {
    Statement s(
        db_,
        "INSERT INTO incidents (kind, state, pid, process_start_time, process_name, target, "
        "signature, threads, spurs, opened_at_ns, updated_at_ns, resolved_at_ns, resolution, "
        "summary, detail, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
        "?14, ?15, ?16)");
    if (!s.ok()) return sqlError(what);
    bindIncident(s, incident);
    // NULL lets SQLite choose the next id.
    if (incident.id != 0) s.bind(16, incident.id);
    if (s.step() != SQLITE_DONE) return sqlError(what);
    return sqlite3_last_insert_rowid(db_);
  });
}

Status IncidentStore::keepIdsAbove(std::int64_t last_id) {
  std::lock_guard lock(mutex_);
  const std::string what = "cannot keep incident ids above " + std::to_string(last_id);
  if (db_ == nullptr) return lostError(what);
  // AUTOINCREMENT's highest id given, as lastId() reads it: raised, never lowered.
  for (const char* sql :
       {"UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'incidents'",
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'incidents', ?1 WHERE NOT EXISTS "
        "(SELECT 1 FROM sqlite_sequence WHERE name = 'incidents')"}) {
    Statement s(db_, sql);
    if (!s.ok() || s.bind(1, last_id).step() != SQLITE_DONE) return sqlError(what);
  }
  return std::monostate{};
}

Result<std::int64_t> IncidentStore::lastId() {
  std::lock_guard lock(mutex_);
  if (db_ == nullptr) return lostError("cannot read the last incident id");
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
  const std::string what = "cannot update incident " + std::to_string(incident.id);
  if (db_ == nullptr) return lostError(what);
  return retryWhenFull([&]() -> Status {
    Statement s(db_,
                "UPDATE incidents SET kind = ?1, state = ?2, pid = ?3, process_start_time = ?4, "
                "process_name = ?5, target = ?6, signature = ?7, threads = ?8, spurs = ?9, "
                "opened_at_ns = ?10, updated_at_ns = ?11, resolved_at_ns = ?12, resolution = ?13, "
                "summary = ?14, detail = ?15 WHERE id = ?16");
    if (!s.ok()) return sqlError(what);
    bindIncident(s, incident);
    s.bind(16, incident.id);
    if (s.step() != SQLITE_DONE) return sqlError(what);
    if (sqlite3_changes(db_) == 0) {
      return makeError(ErrorCode::kInvalidArgument, file_ + ": " + what + ": there is none");
    }
    return std::monostate{};
  });
}

Result<IncidentListing> IncidentStore::list(const IncidentQuery& query) {
  std::lock_guard lock(mutex_);
  if (db_ == nullptr) return lostError("cannot list incidents");
  if (schema_version_ == 0) return IncidentListing{};  // not created yet
  std::string sql = "SELECT " + selectColumns(schema_version_) + " FROM incidents WHERE 1 = 1";
  if (query.state) sql += " AND state = ?1";
  if (query.process) sql += " AND pid = ?2 AND process_start_time = ?3";
  if (query.kind) sql += " AND kind = ?4";
  // An incident across processes is found by any of them: its threads ("1:2 1:3") name them.
  if (query.pid) {
    sql += " AND (pid = ?5 OR (' ' || threads || ' ' || spurs || ' ') LIKE '% ' || ?5 || ':%')";
  }
  if (query.target) sql += " AND target = ?6";
  if (query.since) sql += " AND opened_at_ns >= ?7";
  if (query.after) sql += " AND (opened_at_ns < ?8 OR (opened_at_ns = ?8 AND id < ?9))";
  sql += " ORDER BY opened_at_ns DESC, id DESC";
  if (query.limit > 0) sql += " LIMIT " + std::to_string(query.limit);
  Statement s(db_, sql.c_str());
  if (!s.ok()) return sqlError("cannot list incidents");
  if (query.state) s.bind(1, std::string(toString(*query.state)));
  if (query.process) {
    s.bind(2, static_cast<std::int64_t>(query.process->pid.value));
    s.bind(3, static_cast<std::int64_t>(query.process->start_time));
  }
  if (query.kind) s.bind(4, std::string(toString(*query.kind)));
  if (query.pid) s.bind(5, static_cast<std::int64_t>(query.pid->value));
  if (query.target) s.bind(6, *query.target);
  if (query.since) s.bind(7, toNs(*query.since));
  if (query.after) {
    s.bind(8, toNs(query.after->opened_at));
    s.bind(9, query.after->id);
  }
  IncidentListing out;
  std::string first_reason;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    auto incident = readIncident(s);
    if (incident) {
      out.incidents.push_back(std::move(incident).value());
    } else {
      if (out.unreadable.empty()) first_reason = incident.error().message;
      out.unreadable.push_back(s.integer(0));
    }
  }
  if (rc != SQLITE_DONE) return sqlError("cannot list incidents");
  if (!out.unreadable.empty()) out.warning = unreadableWarning(file_, out.unreadable, first_reason);
  return out;
}

Result<std::optional<Incident>> IncidentStore::get(std::int64_t id) {
  std::lock_guard lock(mutex_);
  if (db_ == nullptr) return lostError("cannot read incident " + std::to_string(id));
  const std::string sql =
      "SELECT " + selectColumns(schema_version_) + " FROM incidents WHERE id = ?1";
  Statement s(db_, sql.c_str());
  if (!s.ok()) return sqlError("cannot read incident " + std::to_string(id));
  s.bind(1, id);
  const int rc = s.step();
  if (rc == SQLITE_ROW) {
    auto incident = readIncident(s);
    if (!incident) {
      return makeError(incident.error().code, file_ + ": incident " + std::to_string(id) +
                                                  " cannot be read: " + incident.error().message);
    }
    return std::optional<Incident>(std::move(incident).value());
  }
  if (rc == SQLITE_DONE) return std::optional<Incident>();
  return sqlError("cannot read incident " + std::to_string(id));
}

Result<std::size_t> IncidentStore::applyRetention(std::chrono::system_clock::time_point now,
                                                  std::chrono::hours max_age,
                                                  std::size_t max_count) {
  std::lock_guard lock(mutex_);
  if (db_ == nullptr) return lostError("cannot apply retention");
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
  if (db_ == nullptr) return lostError("cannot store target " + target.name);
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
  if (db_ == nullptr) return lostError("cannot remove target " + name);
  Statement s(db_, "DELETE FROM targets WHERE name = ?1");
  if (!s.ok()) return sqlError("cannot remove target " + name);
  s.bind(1, name);
  if (s.step() != SQLITE_DONE) return sqlError("cannot remove target " + name);
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<TargetConfig>> IncidentStore::targets(const Config& defaults) {
  std::lock_guard lock(mutex_);
  if (db_ == nullptr) return lostError("cannot read targets");
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
