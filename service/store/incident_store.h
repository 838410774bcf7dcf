#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/ports/incident_repository.h"
#include "model/incident.h"
#include "model/mutex.h"
#include "model/result.h"

struct sqlite3;

namespace wctmon {
class HeldFile;
}

namespace wctmon {

/// Incidents and runtime target registrations in one SQLite file (WAL). Every write is one
/// transaction with synchronous=FULL, so a kill -9 at any moment loses nothing that was
/// committed and leaves the file consistent. An incident's processes, chains and evidence are
/// kept as one binary wctmon.v1.Incident; a row that cannot be read back is reported, never
/// dropped. Every error names the file. Thread-safe.
class IncidentStore final : public IncidentRepository {
 public:
  /// The schema version this build writes.
  static constexpr int kSchemaVersion = 4;

  /// Opens (creating and migrating when needed) the store at `file`. A damaged file (not a
  /// database, unreadable pages, a failed quick check, a table of the schema missing) is an
  /// error with ErrorCode::kDamaged.
  [[nodiscard]] static Result<std::unique_ptr<IncidentStore>> open(
      const std::filesystem::path& file);

  /// A damaged store the service moved aside to make a new one.
  struct MovedAside {
    /// Where the damaged file is now (its -wal and -shm beside it, with those suffixes).
    std::filesystem::path to;
    /// What is wrong with it, in SQLite's words.
    std::string reason;
  };
  /// What the service opened at start.
  struct Opened {
    std::unique_ptr<IncidentStore> store;
    /// Set when the file was damaged (see open()) and was moved aside for a new one.
    std::optional<MovedAside> moved_aside;
  };

  /// Opens the store as open() does; a damaged one is renamed FILE.corrupt-YYYYMMDDTHHMMSSZ (at
  /// `now`, UTC), with its -wal and -shm, and a new store is made at `file`. Nothing else is moved:
  /// a newer schema, a file or directory it may not open or write, a lock held, a full disk are
  /// errors, as from open().
  [[nodiscard]] static Result<Opened> openOrMoveAside(const std::filesystem::path& file,
                                                      std::chrono::system_clock::time_point now);

  /// Opens an existing store read-only, for listing while the service may be writing or not
  /// running. Creates no file (no -wal or -shm left behind) and works in a read-only directory.
  /// An absent file, an empty one, a directory or a database that is not a store is an error
  /// that names the path and says which.
  [[nodiscard]] static Result<std::unique_ptr<IncidentStore>> openReadOnly(
      const std::filesystem::path& file);

  ~IncidentStore() override;
  IncidentStore(const IncidentStore&) = delete;
  IncidentStore& operator=(const IncidentStore&) = delete;

  [[nodiscard]] Result<std::int64_t> insert(const Incident& incident) override;
  [[nodiscard]] Result<std::int64_t> lastId() override;
  [[nodiscard]] Status update(const Incident& incident) override;
  [[nodiscard]] Result<IncidentListing> list(const IncidentQuery& query) override;
  [[nodiscard]] Result<std::optional<Incident>> get(std::int64_t id) override;
  [[nodiscard]] Result<std::size_t> applyRetention(std::chrono::system_clock::time_point now,
                                                   std::chrono::hours max_age,
                                                   std::size_t max_count) override;
  [[nodiscard]] Status putTarget(const TargetConfig& target) override;
  [[nodiscard]] Result<bool> removeTarget(const std::string& name) override;
  [[nodiscard]] Result<std::vector<TargetConfig>> targets(const Config& defaults) override;

  /// Checks that the path of the store still names the file written (not deleted, moved or
  /// replaced while the service runs); when it does not, makes a new store there and writes to it
  /// from now on. Returns what happened to the file then ("FILE: it was deleted"), empty when
  /// nothing did; an error when a new store cannot be made (then the next call tries again).
  [[nodiscard]] Result<std::string> ensureCurrent() override;
  [[nodiscard]] Status keepIdsAbove(std::int64_t last_id) override;

  /// The schema version of the open file.
  [[nodiscard]] int schemaVersion() const { return schema_version_; }

 private:
  IncidentStore(sqlite3* db, std::string file);
  /// Every use of the connection, one at a time (declared first: the members' rules name it).
  Mutex mutex_;
  /// Runs a write (`step`, with the lock held) and, when the disk is full, once more after
  /// folding the write-ahead log into the file: on a small disk the log alone fills it, and
  /// a checkpoint lets it start again from its beginning.
  template <typename Step>
  std::invoke_result_t<Step&> retryWhenFull(Step step) WCTMON_REQUIRES(mutex_);
  /// Builds a new store whole beside `file` and links it in place, so that no reader ever sees
  /// one half made.
  [[nodiscard]] static Status create(const std::filesystem::path& file);
  [[nodiscard]] Status migrate() WCTMON_REQUIRES(mutex_);
  /// Every table of the schema is there: an error saying what is missing and what to do.
  [[nodiscard]] Status checkTables() const WCTMON_REQUIRES(mutex_);
  /// Runs `sql`; a failure says "FILE: WHAT: SQLite's reason".
  [[nodiscard]] Status exec(const char* sql, const std::string& what) WCTMON_REQUIRES(mutex_);
  /// "FILE: WHAT: SQLite's reason" for the last failure, with an ErrorCode that fits it.
  [[nodiscard]] Error sqlError(const std::string& what) const WCTMON_REQUIRES(mutex_);

  sqlite3* db_ WCTMON_GUARDED_BY(mutex_);
  /// The file as opened, to notice it deleted or replaced (none for readers).
  std::unique_ptr<HeldFile> held_ WCTMON_GUARDED_BY(mutex_);
  /// SQLite's result code of the last failure (exec(), sqlError()), kept across a ROLLBACK or a
  /// finalize that clears it.
  mutable int last_failure_ WCTMON_GUARDED_BY(mutex_) = 0;
  /// What happened to a file deleted or replaced while no new one could be made yet (db_ is
  /// null then); empty otherwise.
  std::string lost_ WCTMON_GUARDED_BY(mutex_);
  /// The error of an operation while there is no file (see lost_).
  [[nodiscard]] Error lostError(const std::string& what) const WCTMON_REQUIRES(mutex_);
  /// The database file, named in every error.
  std::string file_;
  int schema_version_ = 0;
};

}  // namespace wctmon
