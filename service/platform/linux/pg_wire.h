#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/result.h"

namespace wctmon::linux_platform {

// The PostgreSQL frontend/backend protocol (version 3.0), as far as one query over a Unix socket
// needs it: the startup message, the server's answers up to ReadyForQuery, one simple query and
// its rows. Authentication is the server's trust or peer method (the connecting thread's user);
// a server that asks for a password is answered with an error, never with a guess.

/// One row of an answer: each column's text, nullopt for NULL.
using PgRow = std::vector<std::optional<std::string>>;

/// The startup message: protocol 3.0 and the parameters (user, database, ...).
[[nodiscard]] std::string pgStartupMessage(
    const std::vector<std::pair<std::string, std::string>>& parameters);
/// A simple query ('Q').
[[nodiscard]] std::string pgQueryMessage(std::string_view sql);
/// The end of the session ('X').
[[nodiscard]] std::string pgTerminateMessage();

/// One message from the server: its type byte and its body.
struct PgMessage {
  char type = 0;
  std::string body;
};

/// Server messages as they arrive, in pieces of any size.
class PgMessageReader {
 public:
  /// Adds bytes that arrived.
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  /// The next whole message; nullopt until one has arrived. Fails on a length no server sends.
  [[nodiscard]] Result<std::optional<PgMessage>> next();

 private:
  std::string buffer_;
  std::size_t at_ = 0;
};

/// The text of an ErrorResponse or NoticeResponse body: "FATAL: role "x" does not exist".
[[nodiscard]] std::string pgErrorText(std::string_view body);
/// Its SQLSTATE ("3D000"); empty when it has none.
[[nodiscard]] std::string pgErrorCode(std::string_view body);
/// The columns of a DataRow body.
[[nodiscard]] Result<PgRow> parsePgDataRow(std::string_view body);

/// Where and as whom to connect.
struct PgEndpoint {
  /// The server's Unix socket (".../.s.PGSQL.5432").
  std::string socket_path;
  std::string user;
  std::string database;
};

/// Runs `sql` (one statement) and returns its rows, all by `deadline`. kAccessDenied when the
/// server refuses the connection or asks for a password, kNotFound when the database does not
/// exist, kIo for the rest.
[[nodiscard]] Result<std::vector<PgRow>> pgQuery(const PgEndpoint& endpoint, std::string_view sql,
                                                 std::chrono::steady_clock::time_point deadline);

}  // namespace wctmon::linux_platform
