#pragma once

// An incident as a row of the store: the schema's steps, the columns written and read back, and
// the message that keeps an incident's processes, chains and evidence.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/incident.h"
#include "model/result.h"
#include "store/sqlite_statement.h"

namespace wctmon::rows {

/// One schema step: its SQL, then, when set, what SQL cannot do (converting rows), in the same
/// transaction.
struct Migration {
  const char* sql;
  Status (*convert)(sqlite3* db, const std::string& file) = nullptr;
};

/// Schema steps, applied in order inside one transaction; step i brings the schema to version
/// i + 1.
[[nodiscard]] std::span<const Migration> migrations();

[[nodiscard]] std::int64_t toNs(std::chrono::system_clock::time_point t);
[[nodiscard]] std::chrono::system_clock::time_point fromNs(std::int64_t ns);

/// The columns read back. A store still at schema version 1 or 2 (read-only, written by an older
/// service) keeps the processes (from version 2), chains and evidence as proto3 JSON in columns
/// of their own: they are read as the JSON of the one message version 3 keeps.
[[nodiscard]] std::string selectColumns(int schema_version);

/// Binds the incident's fields to ?1..?15: the columns of selectColumns() without the id, then
/// its detail.
void bindIncident(sql::Statement& s, const Incident& i);

/// The incident of the current row, or why it cannot be read (without the file or id).
[[nodiscard]] Result<Incident> readIncident(const sql::Statement& s);

/// "FILE: 2 stored incidents cannot be read and are left out (ids 12, 17): incident 12: REASON".
[[nodiscard]] std::string unreadableWarning(const std::string& file,
                                            const std::vector<std::int64_t>& ids,
                                            const std::string& first_reason);

}  // namespace wctmon::rows
