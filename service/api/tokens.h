#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "api/secret_file.h"
#include "model/result.h"

namespace wctmon::api {

/// Who may call what. A reader sees (status, lists, get, watch); an admin also changes what the
/// service does (targets, analyze with capture, reload). The admin token grants reader calls.
enum class Role { kReader, kAdmin };

[[nodiscard]] std::string_view roleName(Role role);

/// Why a call is refused, or nothing.
enum class Refusal {
  kNone,
  /// No token, a malformed `authorization` value, or a token of no role.
  kUnauthenticated,
  /// The reader token on an admin call.
  kPermissionDenied,
};

/// The bearer tokens of the two roles, read from their files at start. A token file that is
/// missing is made, mode 0600, holding a random 256-bit token in hex.
class Tokens {
 public:
  /// Reads (or makes) both token files. An unreadable or empty file, or one token used for
  /// both roles, is an error naming the file.
  [[nodiscard]] static Result<Tokens> load(const std::filesystem::path& admin_file,
                                           const std::filesystem::path& reader_file);

  /// Tokens given directly (tests of the pure parts).
  Tokens(std::string admin, std::string reader);

  /// The role `token` grants, compared in constant time with both tokens; nullopt for none.
  [[nodiscard]] std::optional<Role> roleOf(std::string_view token) const;

  /// Whether a call that needs `required`, carrying `authorization` (the metadata value, e.g.
  /// "Bearer 3f0c..."; nullopt when absent), may run.
  [[nodiscard]] Refusal check(std::optional<std::string_view> authorization, Role required) const;

 private:
  std::string admin_;
  std::string reader_;
};

/// Reads the token in `file`, making the file (mode 0600, a random 256-bit token; readable by
/// `readers` too, see SecretReaders) when it does not exist. Surrounding whitespace is not part
/// of the token.
[[nodiscard]] Result<std::string> readOrMakeToken(const std::filesystem::path& file,
                                                  SecretReaders readers = SecretReaders::kNobody);

}  // namespace wctmon::api
