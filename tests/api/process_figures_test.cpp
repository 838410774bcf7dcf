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
  // Burns a twentieth of a second of CPU, as the figures count it (a loaded machine gives the
  // loop less than its wall time; five seconds at most).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  volatile std::uint64_t spin = 0;
  auto now = readProcessFigures();
  while (now && now->cpu_seconds - before->cpu_seconds < 0.05 &&
         std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < 1'000'000; ++i) spin = spin + 1;
    now = readProcessFigures();
  }
  // Ten more descriptors (handles) open.
  const ScratchFile file;
  std::vector<std::unique_ptr<std::ifstream>> files;
  for (int i = 0; i < 10; ++i) files.push_back(std::make_unique<std::ifstream>(file.path()));
  for (const auto& f : files) ASSERT_TRUE(f->is_open());

  const auto after = readProcessFigures();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_GE(after->cpu_seconds - before->cpu_seconds, 0.05);
  EXPECT_LT(after->cpu_seconds - before->cpu_seconds, 60) << "seconds, not ticks";
  EXPECT_GT(after->resident_bytes, 1024U * 1024U);
  EXPECT_GT(after->virtual_bytes, 1024U * 1024U);
  const auto wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Started before now (a second's leeway: clock ticks round), in the last hour.
  EXPECT_LE(after->start_time_seconds, wall + 1);
  EXPECT_GT(after->start_time_seconds, wall - 3600);
  EXPECT_DOUBLE_EQ(after->start_time_seconds, before->start_time_seconds);
  // Where the platform counts them (not Wine), the ten are counted.
  if (after->open_fds) {
    ASSERT_TRUE(before->open_fds);
    EXPECT_GE(*after->open_fds, *before->open_fds + 10);
    ASSERT_TRUE(after->max_fds);
    EXPECT_GT(*after->max_fds, *after->open_fds);
  }
}

}  // namespace
}  // namespace wctmon::api
