#include "app/logging.h"

#include <spdlog/async.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace wctmon::app {

std::string setUpLogging(const Config& config) {
  try {
    std::vector<spdlog::sink_ptr> sinks;
    if (config.log.console) sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    if (!config.log.file.empty()) {
      const std::filesystem::path file = std::filesystem::path(config.log.file).is_absolute()
                                             ? std::filesystem::path(config.log.file)
                                             : config.state_dir / config.log.file;
      sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
          file.string(), config.log.max_file_bytes, config.log.max_files));
    }
    spdlog::init_thread_pool(config.log.queue_size, 1);
    auto logger = std::make_shared<spdlog::async_logger>(
        "wctmon", sinks.begin(), sinks.end(), spdlog::thread_pool(),
        spdlog::async_overflow_policy::overrun_oldest);
    logger->set_level(spdlog::level::from_str(config.log.level));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    spdlog::flush_every(std::chrono::seconds(1));
    return {};
  } catch (const spdlog::spdlog_ex& e) {
    return std::string("cannot set up logging: ") + e.what();
  }
}

void shutDownLogging() {
  spdlog::default_logger()->flush();
  spdlog::shutdown();
}

}  // namespace wctmon::app
