#include "store/sqlite_statement.h"

#include <cctype>
#include <system_error>

namespace wctmon::sql {

std::string sqlitePath(const std::filesystem::path& path) {
  const auto text = path.u8string();
  return {text.begin(), text.end()};
}

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

std::string sqliteReason(sqlite3* db, int rc) {
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int system = db != nullptr ? sqlite3_system_errno(db) : 0;
  if (system != 0) message += " (" + std::generic_category().message(system) + ")";
  return message;
}

ErrorCode errorCode(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return ErrorCode::kDamaged;
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

Error sqlFailure(sqlite3* db, const std::string& file, const std::string& what) {
  const int rc = sqlite3_extended_errcode(db);
  return makeError(errorCode(rc), file + ": " + what + ": " + sqliteReason(db, rc));
}

}  // namespace wctmon::sql
