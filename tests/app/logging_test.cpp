// The service's log changes level and sinks while it runs, on real files.
#include "app/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

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

}  // namespace
}  // namespace wctmon::app
