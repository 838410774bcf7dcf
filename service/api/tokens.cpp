#include "api/tokens.h"

#include "api/secret_file.h"

namespace wctmon::api {
namespace {

constexpr std::string_view kBearer = "Bearer ";

/// Compares in time that depends on the lengths only, not on where the first difference is.
bool sameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

/// A new token: 256 random bits from the system, in hex.
Result<std::string> randomToken() {
  auto bytes = randomBytes(32);
  if (!bytes) return bytes.error();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : *bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace

std::string_view roleName(Role role) { return role == Role::kAdmin ? "admin" : "reader"; }

Result<std::string> readOrMakeToken(const std::filesystem::path& file, SecretReaders readers) {
  auto fresh = randomToken();
  if (!fresh) return fresh.error();
  auto made = createSecretFile(file, *fresh + "\n", readers);
  if (!made) {
    return makeError(ErrorCode::kIo,
                     "API token file " + file.string() + ": " + made.error().message);
  }
  if (*made == SecretFile::kCreated) return fresh;
  auto content = readSecretFile(file);
  if (!content) {
    return makeError(ErrorCode::kIo, "API token file " + file.string() + ": " +
                                         content.error().message +
                                         ": it is not used; fix it, or delete it to have a new "
                                         "one made");
  }
  const auto token = trim(*content);
  if (token.empty()) {
    return makeError(ErrorCode::kInvalidArgument, "API token file " + file.string() +
                                                      " is empty: write a token in it, or "
                                                      "delete it to have a new one made");
  }
  return std::string(token);
}

Result<Tokens> Tokens::load(const std::filesystem::path& admin_file,
                            const std::filesystem::path& reader_file) {
  auto admin = readOrMakeToken(admin_file);
  if (!admin) return admin.error();
  // Dashboards and operators who are not administrators read with it.
  auto reader = readOrMakeToken(reader_file, SecretReaders::kMonitoringUsers);
  if (!reader) return reader.error();
  if (sameSecret(*admin, *reader)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "API token files " + admin_file.string() + " and " + reader_file.string() +
                         " hold the same token: the reader token would grant admin calls");
  }
  return Tokens(std::move(*admin), std::move(*reader));
}

Tokens::Tokens(std::string admin, std::string reader)
    : admin_(std::move(admin)), reader_(std::move(reader)) {}

std::optional<Role> Tokens::roleOf(std::string_view token) const {
  // Both comparisons always run: the time taken says nothing of which token came close.
  const bool admin = sameSecret(token, admin_);
  const bool reader = sameSecret(token, reader_);
  if (admin) return Role::kAdmin;
  if (reader) return Role::kReader;
  return std::nullopt;
}

Refusal Tokens::check(std::optional<std::string_view> authorization, Role required) const {
  if (!authorization || !authorization->starts_with(kBearer)) return Refusal::kUnauthenticated;
  const auto role = roleOf(trim(authorization->substr(kBearer.size())));
  if (!role) return Refusal::kUnauthenticated;
  if (required == Role::kAdmin && *role != Role::kAdmin) return Refusal::kPermissionDenied;
  return Refusal::kNone;
}

}  // namespace wctmon::api
