// The service's log changes level and sinks while it runs, on real files, and under systemd is
// the journal's. Built for Linux only, as every test of this CMakeLists (Windows: windows.cmake).
#include "app/logging.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/temp_dir.h"

namespace wctmon::app {
namespace {

class LogDir : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.state_dir = dir_.path();
    config_.log.file = "first.log";
    config_.log.console = false;
  }

  [[nodiscard]] std::string text(const std::string& file) const {
    std::ifstream in(config_.state_dir / file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  testing::TempDir dir_{"log"};
  Config config_;
};

TEST_F(LogDir, ANewFileTakesTheMessagesFromTheReloadOn) {
  {
    auto log = ServiceLog::start(config_);
    ASSERT_TRUE(log) << log.error().message;
    spdlog::info("before the reload");
    // The log is asynchronous: what was queued before a swap goes to the new sinks. Wait for
    // this one to be written.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (text("first.log").find("before the reload") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      spdlog::default_logger()->flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    auto next = config_.log;
    next.file = "second.log";
    auto reopened = (*log)->reconfigure(next);
    ASSERT_TRUE(reopened) << reopened.error().message;
    spdlog::info("after the reload");
  }  // flushed
  EXPECT_NE(text("first.log").find("info before the reload"), std::string::npos);
  EXPECT_EQ(text("first.log").find("after the reload"), std::string::npos) << text("first.log");
  EXPECT_NE(text("second.log").find("info after the reload"), std::string::npos)
      << text("second.log");
}

TEST_F(LogDir, AFileThatCannotBeOpenedKeepsTheRunningOneAndTheLevelStillChanges) {
  std::ofstream(config_.state_dir / "plain") << "a file, not a directory";
  {
    auto log = ServiceLog::start(config_);
    ASSERT_TRUE(log) << log.error().message;
    auto next = config_.log;
    next.file = "plain/wctmon.log";
    next.level = "warn";
    const auto reopened = (*log)->reconfigure(next);
    ASSERT_FALSE(reopened);
    EXPECT_NE(reopened.error().message.find("cannot open the new log"), std::string::npos)
        << reopened.error().message;
    spdlog::info("below the new level");
    spdlog::warn("still in the first file");
  }
  EXPECT_EQ(text("first.log").find("below the new level"), std::string::npos) << text("first.log");
  EXPECT_NE(text("first.log").find("warning still in the first file"), std::string::npos)
      << text("first.log");
}

/// Standard error made a file of the test's for its life, and named by $JOURNAL_STREAM as
/// systemd names the journal's stream when it connects one: the service sees the journal.
class JournalStream {
 public:
  JournalStream(const std::filesystem::path& file, bool named) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(fd, STDERR_FILENO);
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    if (named) {
      ::setenv("JOURNAL_STREAM",
               (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(), 1);
    }
  }
  ~JournalStream() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::unsetenv("JOURNAL_STREAM");
  }
  JournalStream(const JournalStream&) = delete;
  JournalStream& operator=(const JournalStream&) = delete;

 private:
  int saved_ = -1;
};

TEST_F(LogDir, UnderTheJournalALineIsItsPriorityAndMessageAndNoFileIsWrittenUnlessConfigured) {
  config_.log.console = true;
  config_.log.file.reset();
  config_.log.level = "debug";
  {
    JournalStream journal(config_.state_dir / "journal", true);
    auto log = ServiceLog::start(config_);
    ASSERT_TRUE(log) << log.error().message;
    spdlog::debug("looked");
    spdlog::info("informed");
    spdlog::warn("warned");
    spdlog::error("failed \x1b[31m");
    spdlog::critical("gave up");
  }
  // No second timestamp, no level word: journalctl shows its own, and colours by priority.
  EXPECT_EQ(text("journal"),
            "<7>looked\n<6>informed\n<4>warned\n<3>failed \\x1b[31m\n<2>gave up\n");
  EXPECT_FALSE(std::filesystem::exists(config_.state_dir / "wctmon.log"));

  // A file configured is written there too, in the file's own format.
  config_.log.file = "kept.log";
  {
    JournalStream journal(config_.state_dir / "journal", true);
    auto log = ServiceLog::start(config_);
    ASSERT_TRUE(log) << log.error().message;
    spdlog::warn("in both");
  }
  EXPECT_EQ(text("journal"), "<4>in both\n");
  EXPECT_NE(text("kept.log").find(" warning in both"), std::string::npos) << text("kept.log");
}

TEST_F(LogDir, AStreamThatIsNotTheJournalNamedKeepsTheTimestampedLinesAndTheDefaultFile) {
  config_.log.console = true;
  config_.log.file.reset();
  {
    // $JOURNAL_STREAM inherited, but standard error redirected since: not the journal.
    JournalStream journal(config_.state_dir / "journal", false);
    ::setenv("JOURNAL_STREAM", "1:1", 1);
    auto log = ServiceLog::start(config_);
    ASSERT_TRUE(log) << log.error().message;
    spdlog::warn("plain");
  }
  EXPECT_NE(text("journal").find(" warning plain\n"), std::string::npos) << text("journal");
  EXPECT_EQ(text("journal").find("<4>"), std::string::npos) << text("journal");
  EXPECT_NE(text("wctmon.log").find(" warning plain"), std::string::npos);
}

}  // namespace
}  // namespace wctmon::app
