#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace wctmon {

/// A file held open, to tell later whether its path still names it: a store whose file was
/// deleted (or replaced) while the service runs would otherwise take every later write into a
/// file nobody can read. One implementation per platform, chosen by CMake (held_file_posix.cpp,
/// held_file_windows.cpp).
class HeldFile {
 public:
  /// Holds `file` open; none when it cannot be opened (then nothing is checked).
  [[nodiscard]] static std::unique_ptr<HeldFile> open(const std::filesystem::path& file);

  ~HeldFile();
  HeldFile(const HeldFile&) = delete;
  HeldFile& operator=(const HeldFile&) = delete;

  /// Empty while the path still names the held file; else what happened to it, for people
  /// ("it was deleted", "another file took its place").
  [[nodiscard]] std::string whyNotAtItsPath() const;

 private:
  HeldFile(std::filesystem::path file, std::intptr_t handle)
      : file_(std::move(file)), handle_(handle) {}
  std::filesystem::path file_;
  std::intptr_t handle_;  // the descriptor or HANDLE of the open file
};

}  // namespace wctmon
