#include "store/incident_store.h"

#include <ctime>
#include <system_error>

#include "model/calendar.h"
#include "os/durable_file.h"
#include "os/owned_files.h"
#include "store/held_file.h"
#include "store/incident_rows.h"
#include "store/sqlite_statement.h"

// The store's file: made whole before anyone sees it, opened and checked, migrated, moved aside
// when damaged, and made again when it is deleted or replaced under the service. The rows are
// read and written in incident_queries.cpp.

namespace wctmon {
namespace {

using sql::errorCode;
using sql::fileUri;
using sql::sqlFailure;
using sql::sqlitePath;
using sql::sqliteReason;
using sql::Statement;

}  // namespace

IncidentStore::IncidentStore(sqlite3* db, std::string file) : db_(db), file_(std::move(file)) {}

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
  // Registers and stacks of other users' processes are in it: the account's, readable by its group
  // at most when an administrator says so (0640; the service makes it 0600, and narrows a store
  // made 0644 by an older version), and never another file through a link or a second name.
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string part = file.string() + suffix;
    if (auto why = checkOwnedFile(part, 0640); !why.empty()) {
      return makeError(ErrorCode::kAccessDenied, "the incident store " + part + ": " + why);
    }
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      sqlitePath(file).c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqliteReason(db, rc);
    sqlite3_close(db);
    return makeError(ErrorCode::kIo,
                     "cannot open the incident store " + file.string() + ": " + message);
  }
  std::unique_ptr<IncidentStore> store(new IncidentStore(db, file.string()));
  MutexLock lock(store->mutex_);  // nobody else has it yet: for the lock rules
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
    return s.error();
  }
  if (auto s = store->migrate(); !s) {
    return s.error();
  }
  if (auto s = store->checkTables(); !s) {
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
      return store->sqlError("cannot check the incident store");
    }
    const int step = check.step();
    if (step != SQLITE_ROW) {
      return store->sqlError("cannot check the incident store");
    }
    if (const auto result = check.text(0); result != "ok") {
      return makeError(ErrorCode::kDamaged,
                       "the incident store " + file.string() + " is damaged: " + result);
    }
  }
  store->held_ = HeldFile::open(file);
  return store;
}

Result<IncidentStore::Opened> IncidentStore::openOrMoveAside(
    const std::filesystem::path& file, std::chrono::system_clock::time_point now) {
  auto first = open(file);
  if (first) return Opened{std::move(first).value(), std::nullopt};
  if (first.error().code != ErrorCode::kDamaged) return first.error();
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
  MutexLock lock(mutex_);
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
  auto fresh = open(file_);
  if (!fresh) {
    return makeError(
        fresh.error().code,
        file_ + ": " + lost_ + ", and a new store cannot be made there: " + fresh.error().message);
  }
  MutexLock fresh_lock((*fresh)->mutex_);
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
    MutexLock lock(store.mutex_);
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
  MutexLock lock(store->mutex_);
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
      return makeError(ErrorCode::kDamaged,
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
    const auto& migration = rows::migrations()[static_cast<std::size_t>(version)];
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

}  // namespace wctmon
