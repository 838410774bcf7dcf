#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace wctmon {

/// SHA-256 (FIPS 180-4) of a stream of bytes given in pieces.
class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> bytes);
  /// The digest of what was given, in lowercase hex; the object is spent.
  [[nodiscard]] std::string finishHex();

 private:
  void block(const std::uint8_t* p);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> pending_{};
  std::size_t pending_size_ = 0;
  std::uint64_t total_bytes_ = 0;
};

/// The SHA-256 of the file at `path`, in lowercase hex; nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> fileSha256(const std::filesystem::path& path);

}  // namespace wctmon
