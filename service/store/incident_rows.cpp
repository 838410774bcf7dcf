#include "store/incident_rows.h"

#include <google/protobuf/util/json_util.h>

#include <charconv>
#include <system_error>

#include "model/format.h"
#include "store/incident_store.h"
#include "wire/proto_convert.h"

namespace wctmon::rows {
namespace {

using sql::sqlFailure;
using sql::Statement;

Status convertDetailsToBinary(sqlite3* db, const std::string& file);

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

constexpr const char* kColumns =
    "id, kind, state, pid, process_start_time, process_name, target, signature, threads, spurs, "
    "opened_at_ns, updated_at_ns, resolved_at_ns, resolution, summary, ";

/// The processes, chains, evidence and dump of `i` as a wctmon.v1.Incident that holds only those,
/// in binary.
std::string detailOf(const Incident& i) {
  v1::Incident detail;
  for (const auto& p : i.processes) *detail.add_processes() = wire::toProto(p);
  for (const auto& c : i.chains) *detail.add_chains() = wire::toProto(c);
  for (const auto& e : i.evidence) *detail.add_evidence() = wire::toProto(e);
  if (i.dump) *detail.mutable_dump() = wire::toProto(*i.dump);
  return detail.SerializeAsString();
}

/// Reads the JSON an older schema kept (see selectColumns and the migration to version 3).
google::protobuf::util::Status detailFromJson(std::string_view json, v1::Incident& detail) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  return google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &detail, options);
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

/// Schema steps, applied in order inside one transaction; step i brings the schema to version
/// i + 1. Never edit a released step: add one.
constexpr Migration kMigrations[] = {
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
    // The kinds of hangs seen from outside (a failing probe, a spinning thread, a stall, a
    // service stuck pending, a window that does not answer): SQLite cannot change a CHECK in
    // place, so the table is made anew with its rows, ids and index.
    {R"sql(
CREATE TABLE incidents_v4 (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('deadlock', 'hang', 'unresponsive', 'busy', 'stall',
                                     'service-hung', 'window-hung')),
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
  detail BLOB NOT NULL DEFAULT x''
);
INSERT INTO incidents_v4 (id, kind, state, pid, process_start_time, process_name, target,
                          signature, threads, spurs, opened_at_ns, updated_at_ns, resolved_at_ns,
                          resolution, summary, detail)
  SELECT id, kind, state, pid, process_start_time, process_name, target, signature, threads,
         spurs, opened_at_ns, updated_at_ns, resolved_at_ns, resolution, summary, detail
  FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_v4 RENAME TO incidents;
CREATE INDEX incidents_by_state ON incidents(state, opened_at_ns);
)sql"},
};

static_assert(std::size(kMigrations) == IncidentStore::kSchemaVersion);

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }

std::int64_t toNs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point fromNs(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

std::string selectColumns(int schema_version) {
  if (schema_version >= 3) return std::string(kColumns) + "detail";
  const std::string processes =
      schema_version >= 2 ? "CASE processes WHEN '' THEN '[]' ELSE processes END" : "'[]'";
  return std::string(kColumns) + "'{\"processes\":' || " + processes +
         " || ',\"chains\":' || chains || ',\"evidence\":' || evidence || '}' AS detail";
}

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

Result<Incident> readIncident(const Statement& s) {
  Incident i;
  i.id = s.integer(0);
  i.kind = incidentKindFromString(s.text(1)).value_or(IncidentKind::kDeadlock);
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
  if (detail.has_dump()) i.dump = wire::fromProto(detail.dump());
  return i;
}

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

}  // namespace wctmon::rows
