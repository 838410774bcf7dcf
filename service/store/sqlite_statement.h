#pragma once

// SQLite's C API as the store uses it: a statement finalized on every path, paths and URIs as
// SQLite takes them, and its failures as wctmon errors.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "model/result.h"

namespace wctmon::sql {

/// A path as SQLite takes it: UTF-8 on every platform (path.string() is the ANSI code page on
/// Windows).
[[nodiscard]] std::string sqlitePath(const std::filesystem::path& path);

/// The "file:" URI of `path` with `query`: bytes that URIs reserve are percent-encoded.
[[nodiscard]] std::string fileUri(const std::filesystem::path& path, const std::string& query);

/// SQLite's message for the last failure on `db`, with the system's reason when there is one:
/// "unable to open database file" alone does not say why.
[[nodiscard]] std::string sqliteReason(sqlite3* db, int rc);

/// What a failed SQLite call means for the caller: a damaged file (not a database, a page that
/// does not read), the disk or the file otherwise (full, unreadable, locked), a write that
/// breaks a rule of the schema (an id taken), or a mistake of this code (SQL that does not
/// prepare).
[[nodiscard]] ErrorCode errorCode(int rc);

/// "FILE: WHAT: REASON" for the last failure on `db`.
[[nodiscard]] Error sqlFailure(sqlite3* db, const std::string& file, const std::string& what);

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

}  // namespace wctmon::sql
