#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/config.h"
#include "core/incident.h"
#include "core/result.h"

namespace wctmon {

/// Success without a value.
using Status = Result<std::monostate>;

/// Which incidents to list.
struct IncidentQuery {
  std::optional<IncidentState> state;
  std::optional<ProcessIdentity> process;
  /// Most recent first, at most this many; 0 = all.
  std::size_t limit = 0;
};

/// Incidents and runtime target registrations in one SQLite file (WAL). Every write is one
/// transaction with synchronous=FULL, so a kill -9 at any moment loses nothing that was
/// committed and leaves the file consistent. Thread-safe.
class IncidentStore {
 public:
  /// The schema version this build writes.
  static constexpr int kSchemaVersion = 2;

  /// Opens (creating and migrating when needed) the store at `file`.
  [[nodiscard]] static Result<std::unique_ptr<IncidentStore>> open(
      const std::filesystem::path& file);

  /// Opens an existing store read-only, for listing while the service may be writing or not
  /// running. Creates no file (no -wal or -shm left behind) and works in a read-only directory.
  /// An absent file, an empty one, a directory or a database that is not a store is an error
  /// that names the path and says which.
  [[nodiscard]] static Result<std::unique_ptr<IncidentStore>> openReadOnly(
      const std::filesystem::path& file);

  ~IncidentStore();
  IncidentStore(const IncidentStore&) = delete;
  IncidentStore& operator=(const IncidentStore&) = delete;

  /// Stores a new incident; returns its id.
  [[nodiscard]] Result<std::int64_t> insert(const Incident& incident);
  /// Rewrites a stored incident (by id).
  [[nodiscard]] Status update(const Incident& incident);
  [[nodiscard]] Result<std::vector<Incident>> list(const IncidentQuery& query);
  [[nodiscard]] Result<std::optional<Incident>> get(std::int64_t id);

  /// Deletes resolved incidents older than `max_age` and the oldest beyond `max_count`;
  /// returns how many went.
  [[nodiscard]] Result<std::size_t> applyRetention(std::chrono::system_clock::time_point now,
                                                   std::chrono::hours max_age,
                                                   std::size_t max_count);

  /// Runtime target registrations, kept across restarts.
  [[nodiscard]] Status putTarget(const TargetConfig& target);
  [[nodiscard]] Result<bool> removeTarget(const std::string& name);
  [[nodiscard]] Result<std::vector<TargetConfig>> targets(const Config& defaults);

  [[nodiscard]] int schemaVersion() const { return schema_version_; }

 private:
  explicit IncidentStore(sqlite3* db) : db_(db) {}
  /// Builds a new store whole beside `file` and links it in place, so that no reader ever sees
  /// one half made.
  [[nodiscard]] static Status create(const std::filesystem::path& file);
  [[nodiscard]] Status migrate();
  [[nodiscard]] Status exec(const char* sql);
  [[nodiscard]] Error sqlError(const std::string& what) const;

  std::mutex mutex_;
  sqlite3* db_;
  int schema_version_ = 0;
};

}  // namespace wctmon
