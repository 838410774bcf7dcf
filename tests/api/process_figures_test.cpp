// The service's own process as the process_* metrics report it, read from the system for the
// test's own process: the CPU it burns, its memory, descriptors and start.
#include "api/process_figures.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace wctmon::api {
namespace {

/// A file of its own in the temporary directory, removed when destroyed (the Windows build runs
/// this test too, where mkdtemp is not).
class ScratchFile {
 public:
  ScratchFile()
      : path_(std::filesystem::temp_directory_path() /
              ("wctmon-figures-" + std::to_string(std::random_device()()))) {
    std::ofstream(path_) << "x";
  }
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(ProcessFigures, TheCallingProcessIsReadAsItIs) {
  const auto before = readProcessFigures();
  ASSERT_TRUE(before) << before.error().message;
  // Burns a tenth of a second of CPU.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  volatile std::uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  // Ten more descriptors (handles) open.
  const ScratchFile file;
  std::vector<std::unique_ptr<std::ifstream>> files;
  for (int i = 0; i < 10; ++i) files.push_back(std::make_unique<std::ifstream>(file.path()));
  for (const auto& f : files) ASSERT_TRUE(f->is_open());

  const auto after = readProcessFigures();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_GE(after->cpu_seconds - before->cpu_seconds, 0.05);
  EXPECT_GT(after->resident_bytes, 1024U * 1024U);
  EXPECT_GT(after->virtual_bytes, 1024U * 1024U);
  const auto now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Started before now (a second's leeway: clock ticks round), in the last hour.
  EXPECT_LE(after->start_time_seconds, now + 1);
  EXPECT_GT(after->start_time_seconds, now - 3600);
  ASSERT_TRUE(before->open_fds && after->open_fds);
  EXPECT_GE(*after->open_fds, *before->open_fds + 10);
  ASSERT_TRUE(after->max_fds);
  EXPECT_GT(*after->max_fds, *after->open_fds);
}

}  // namespace
}  // namespace wctmon::api
