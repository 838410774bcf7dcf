#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace wctmon {

/// SHA-256 (FIPS 180-4) of a stream of bytes given in pieces: libcrypto's on Linux (with the
/// CPU's SHA instructions, five times faster: a dump's digest is of every byte of a file of
/// gigabytes), its own elsewhere.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const std::byte> bytes);
  /// The digest of what was given, in lowercase hex; the object is spent.
  [[nodiscard]] std::string finishHex();

 private:
  /// The 32 bytes of the digest (each implementation's).
  [[nodiscard]] std::array<std::uint8_t, 32> finishBytes();

  struct State;
  std::unique_ptr<State> state_;
};

/// The SHA-256 of the file at `path`, in lowercase hex; nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> fileSha256(const std::filesystem::path& path);

}  // namespace wctmon
