#include "support/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <system_error>

namespace wctmon::testing {

TempDir::TempDir(std::string_view purpose) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / ("wctmon-" + std::string(purpose) + "-XXXXXX"))
          .string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace wctmon::testing
