#include "platform/linux/pg_wire.h"

#include "platform/linux/unix_stream.h"

namespace wctmon::linux_platform {
namespace {

/// Protocol 3.0: major version in the high 16 bits.
constexpr std::uint32_t kProtocolVersion = 3U << 16;
/// No answer of ours comes near these; a longer message is a stream out of step, and a longer
/// answer is not read to its end.
constexpr std::uint32_t kMaxMessage = 16U << 20;
constexpr std::size_t kMaxAnswer = 64U << 20;
/// AuthenticationOk; every other authentication request asks for something we do not send.
constexpr std::uint32_t kAuthenticationOk = 0;
/// The SQLSTATE of a database that does not exist.
constexpr std::string_view kInvalidCatalogName = "3D000";

void putInt32(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

std::uint32_t int32At(std::string_view bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

/// A message: the type byte, then the length of what follows, itself included.
std::string message(char type, std::string_view body) {
  std::string out(1, type);
  putInt32(out, static_cast<std::uint32_t>(body.size() + 4));
  out.append(body);
  return out;
}

/// The value of the field `code` of an error body: fields are a code byte and a C string each,
/// ended by a zero byte.
std::string_view errorField(std::string_view body, char code) {
  std::size_t at = 0;
  while (at < body.size() && body[at] != '\0') {
    const char field = body[at++];
    const auto end = body.find('\0', at);
    const auto value = body.substr(at, end == std::string_view::npos ? end : end - at);
    if (field == code) return value;
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return {};
}

/// One connection to a server, from the startup message to the end of the query.
class Session {
 public:
  explicit Session(UnixStream stream) : stream_(std::move(stream)) {}

  /// Sends the startup message and reads up to ReadyForQuery.
  std::optional<Error> start(const PgEndpoint& endpoint) {
    if (auto failed = stream_.sendAll(pgStartupMessage({{"user", endpoint.user},
                                                        {"database", endpoint.database},
                                                        {"application_name", "wctmon"}})))
      return failed;
    for (;;) {
      auto m = receive();
      if (!m) return m.error();
      switch (m->type) {
        case 'R': {
          if (m->body.size() < 4) return outOfStep();
          const auto method = int32At(m->body, 0);
          if (method != kAuthenticationOk) {
            return makeError(ErrorCode::kAccessDenied,
                             "the PostgreSQL server asks user " + endpoint.user +
                                 " for a password (authentication method " +
                                 std::to_string(method) + "); only trust and peer are used");
          }
          break;
        }
        case 'E': {
          const auto code = pgErrorCode(m->body);
          return makeError(
              code == kInvalidCatalogName ? ErrorCode::kNotFound : ErrorCode::kAccessDenied,
              "the PostgreSQL server refused the connection: " + pgErrorText(m->body));
        }
        case 'Z':
          return std::nullopt;
        default:
          // ParameterStatus, BackendKeyData, NoticeResponse: nothing this session needs.
          break;
      }
    }
  }

  Result<std::vector<PgRow>> query(std::string_view sql) {
    if (auto failed = stream_.sendAll(pgQueryMessage(sql))) return *failed;
    std::vector<PgRow> rows;
    std::size_t answered = 0;
    std::optional<Error> error;
    for (;;) {
      auto m = receive();
      if (!m) return m.error();
      if (m->type == 'D') {
        answered += m->body.size();
        if (answered > kMaxAnswer) {
          return makeError(ErrorCode::kIo, "the PostgreSQL server's answer is over 64 MiB");
        }
        auto row = parsePgDataRow(m->body);
        if (!row) return row.error();
        rows.push_back(std::move(row).value());
      } else if (m->type == 'E') {
        error = makeError(ErrorCode::kIo, "the PostgreSQL query failed: " + pgErrorText(m->body));
      } else if (m->type == 'Z') {
        break;
      }
    }
    // Best effort: the server ends the session by itself when the socket closes.
    (void)stream_.sendAll(pgTerminateMessage());
    if (error) return *error;
    return rows;
  }

 private:
  Result<PgMessage> receive() {
    for (;;) {
      auto m = reader_.next();
      if (!m) return m.error();
      if (*m) return std::move(**m);
      std::string bytes;
      auto more = stream_.receive(bytes);
      if (!more) return more.error();
      if (!*more) return makeError(ErrorCode::kIo, "the PostgreSQL server closed the connection");
      reader_.feed(bytes);
    }
  }

  static Error outOfStep() {
    return makeError(ErrorCode::kIo, "the PostgreSQL server's answer is out of step");
  }

  UnixStream stream_;
  PgMessageReader reader_;
};

}  // namespace

std::string pgStartupMessage(const std::vector<std::pair<std::string, std::string>>& parameters) {
  std::string body;
  putInt32(body, kProtocolVersion);
  for (const auto& [name, value] : parameters) {
    body.append(name).push_back('\0');
    body.append(value).push_back('\0');
  }
  body.push_back('\0');
  // The startup message alone has no type byte.
  std::string out;
  putInt32(out, static_cast<std::uint32_t>(body.size() + 4));
  return out + body;
}

std::string pgQueryMessage(std::string_view sql) {
  std::string body(sql);
  body.push_back('\0');
  return message('Q', body);
}

std::string pgTerminateMessage() { return message('X', {}); }

Result<std::optional<PgMessage>> PgMessageReader::next() {
  const std::string_view rest = std::string_view(buffer_).substr(at_);
  if (rest.size() < 5) return std::optional<PgMessage>{};
  const auto length = int32At(rest, 1);
  if (length < 4 || length > kMaxMessage) {
    return makeError(ErrorCode::kIo,
                     "the PostgreSQL server sent a message of length " + std::to_string(length));
  }
  if (rest.size() < 1 + static_cast<std::size_t>(length)) return std::optional<PgMessage>{};
  PgMessage m{rest[0], std::string(rest.substr(5, length - 4))};
  at_ += 1 + length;
  if (at_ == buffer_.size()) {
    buffer_.clear();
    at_ = 0;
  }
  return std::optional<PgMessage>(std::move(m));
}

std::string pgErrorText(std::string_view body) {
  auto severity = errorField(body, 'V');
  if (severity.empty()) severity = errorField(body, 'S');
  const auto text = errorField(body, 'M');
  if (severity.empty()) return std::string(text);
  return std::string(severity) + ": " + std::string(text);
}

std::string pgErrorCode(std::string_view body) { return std::string(errorField(body, 'C')); }

Result<PgRow> parsePgDataRow(std::string_view body) {
  const auto bad = [] { return makeError(ErrorCode::kIo, "a PostgreSQL row is malformed"); };
  if (body.size() < 2) return bad();
  const auto columns =
      (static_cast<unsigned char>(body[0]) << 8) | static_cast<unsigned char>(body[1]);
  PgRow row;
  row.reserve(columns);
  std::size_t at = 2;
  for (int i = 0; i < columns; ++i) {
    if (body.size() - at < 4) return bad();
    const auto length = int32At(body, at);
    at += 4;
    if (length == 0xffffffffU) {
      row.emplace_back(std::nullopt);
      continue;
    }
    if (body.size() - at < length) return bad();
    row.emplace_back(std::string(body.substr(at, length)));
    at += length;
  }
  if (at != body.size()) return bad();
  return row;
}

Result<std::vector<PgRow>> pgQuery(const PgEndpoint& endpoint, std::string_view sql,
                                   std::chrono::steady_clock::time_point deadline) {
  auto stream = UnixStream::connect(endpoint.socket_path, "the PostgreSQL server", deadline);
  if (!stream) return stream.error();
  Session session(std::move(stream).value());
  if (auto failed = session.start(endpoint)) return *failed;
  return session.query(sql);
}

}  // namespace wctmon::linux_platform
