#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace wctmon::testing {

/// A directory made for one test under the system's temporary directory
/// (`wctmon-<purpose>-XXXXXX`), removed with its contents when destroyed.
class TempDir {
 public:
  explicit TempDir(std::string_view purpose);
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// The path of `name` in the directory.
  [[nodiscard]] std::filesystem::path operator/(std::string_view name) const {
    return path_ / name;
  }
  /// The directory's own name, unique among the tests running beside this one (a tag).
  [[nodiscard]] std::string name() const { return path_.filename().string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace wctmon::testing
