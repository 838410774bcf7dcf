#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace wctmon::wire {

/// The value of type `T` at the start of `raw` (little-endian, as x86-64 and the dump formats
/// are); nullopt when `raw` is none or too short.
template <typename T>
[[nodiscard]] std::optional<T> valueAt(const std::optional<std::string>& raw) {
  if (!raw || raw->size() < sizeof(T)) return std::nullopt;
  T value{};
  std::memcpy(&value, raw->data(), sizeof(T));
  return value;
}

/// Reads little-endian integers and byte runs at offsets of a file, each checked against its
/// size: what a reader of a dump's headers needs.
class FileReader {
 public:
  explicit FileReader(const std::filesystem::path& path) : in_(path, std::ios::binary) {
    if (in_) {
      in_.seekg(0, std::ios::end);
      size_ = static_cast<std::uint64_t>(in_.tellg());
    }
  }
  /// Whether the file could be opened.
  [[nodiscard]] bool open() const { return static_cast<bool>(in_); }
  /// The file's size in bytes.
  [[nodiscard]] std::uint64_t size() const { return size_; }

  /// `n` bytes at `offset`; nullopt when they are not all in the file.
  [[nodiscard]] std::optional<std::string> bytes(std::uint64_t offset, std::uint64_t n) {
    if (offset > size_ || n > size_ - offset) return std::nullopt;
    std::string out(n, '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    if (!in_.read(out.data(), static_cast<std::streamsize>(n))) return std::nullopt;
    return out;
  }
  /// The value of type `T` at `offset`.
  template <typename T>
  [[nodiscard]] std::optional<T> at(std::uint64_t offset) {
    return valueAt<T>(bytes(offset, sizeof(T)));
  }

 private:
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

}  // namespace wctmon::wire
