#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/ports/incident_repository.h"
#include "model/incident.h"
#include "model/result.h"

struct sqlite3;

namespace wctmon {

/// Incidents and runtime target registrations in one SQLite file (WAL). Every write is one
/// transaction with synchronous=FULL, so a kill -9 at any moment loses nothing that was
/// committed and leaves the file consistent. An incident's processes, chains and evidence are
/// kept as one binary wctmon.v1.Incident; a row that cannot be read back is reported, never
/// dropped. Every error names the file. Thread-safe.
class IncidentStore final : public IncidentRepository {
 public:
  /// The schema version this build writes.
  static constexpr int kSchemaVersion = 3;

  /// Opens (creating and migrating when needed) the store at `file`.
  [[nodiscard]] static Result<std::unique_ptr<IncidentStore>> open(
      const std::filesystem::path& file);

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

  /// The schema version of the open file.
  [[nodiscard]] int schemaVersion() const { return schema_version_; }

 private:
  IncidentStore(sqlite3* db, std::string file) : db_(db), file_(std::move(file)) {}
  /// Builds a new store whole beside `file` and links it in place, so that no reader ever sees
  /// one half made.
  [[nodiscard]] static Status create(const std::filesystem::path& file);
  [[nodiscard]] Status migrate();
  /// Every table of the schema is there: an error saying what is missing and what to do.
  [[nodiscard]] Status checkTables() const;
  /// Runs `sql`; a failure says "FILE: WHAT: SQLite's reason".
  [[nodiscard]] Status exec(const char* sql, const std::string& what);
  /// "FILE: WHAT: SQLite's reason" for the last failure, with an ErrorCode that fits it.
  [[nodiscard]] Error sqlError(const std::string& what) const;

  std::mutex mutex_;
  sqlite3* db_;
  /// The database file, named in every error.
  std::string file_;
  int schema_version_ = 0;
};

}  // namespace wctmon
