#include <algorithm>
#include <string>

#include "store/incident_rows.h"
#include "store/incident_store.h"
#include "store/sqlite_statement.h"

// The incidents and targets of an open store, read and written one transaction each.

namespace wctmon {
namespace {

using rows::bindIncident;
using rows::readIncident;
using rows::selectColumns;
using rows::toNs;
using rows::unreadableWarning;
using sql::Statement;

}  // namespace

template <typename Step>
std::invoke_result_t<Step&> IncidentStore::retryWhenFull(Step step) {
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
Result<std::int64_t> IncidentStore::insert(const Incident& incident) {
  MutexLock lock(mutex_);
  const std::string what = incident.id != 0 ? "cannot store incident " + std::to_string(incident.id)
                                            : std::string("cannot store a new incident");
  if (db_ == nullptr) return lostError(what);
  return retryWhenFull([&]() WCTMON_REQUIRES(mutex_) -> Result<std::int64_t> {
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
  MutexLock lock(mutex_);
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
  MutexLock lock(mutex_);
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
  MutexLock lock(mutex_);
  const std::string what = "cannot update incident " + std::to_string(incident.id);
  if (db_ == nullptr) return lostError(what);
  return retryWhenFull([&]() WCTMON_REQUIRES(mutex_) -> Status {
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
  MutexLock lock(mutex_);
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
  // Newest first by id, the order incidents were made in: their opening times follow the wall
  // clock, which may be stepped back (an incident "from the future" would stay on top of every
  // page and hide the current ones).
  if (query.after) sql += " AND id < ?9";
  sql += " ORDER BY id DESC";
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
  if (query.after) s.bind(9, query.after->id);
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
  MutexLock lock(mutex_);
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
  MutexLock lock(mutex_);
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
  MutexLock lock(mutex_);
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
  MutexLock lock(mutex_);
  if (db_ == nullptr) return lostError("cannot remove target " + name);
  Statement s(db_, "DELETE FROM targets WHERE name = ?1");
  if (!s.ok()) return sqlError("cannot remove target " + name);
  s.bind(1, name);
  if (s.step() != SQLITE_DONE) return sqlError("cannot remove target " + name);
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<TargetConfig>> IncidentStore::targets(const Config& defaults) {
  MutexLock lock(mutex_);
  if (db_ == nullptr) return lostError("cannot read targets");
  Statement s(db_, "SELECT name, spec FROM targets ORDER BY created_at_ns, name");
  if (!s.ok()) return sqlError("cannot read targets");
  std::vector<TargetConfig> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (auto target = parseTarget(s.text(1), defaults)) out.push_back(std::move(target).value());
  }
  if (rc != SQLITE_DONE) return sqlError("cannot read targets");
  return out;
}

}  // namespace wctmon
