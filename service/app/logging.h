#pragma once

#include <spdlog/logger.h>
#include <spdlog/sinks/dist_sink.h>

#include <filesystem>
#include <memory>

#include "core/config.h"
#include "model/result.h"

namespace wctmon::app {

/// The service's log, installed as spdlog's default logger: asynchronous, with a bounded queue
/// that drops the oldest message rather than block a worker, to the console and/or a rotating
/// file. The level and the sinks change while the service runs; the queue does not.
class ServiceLog {
 public:
  /// Installs the default logger for `config.log`, the file relative to `config.state_dir`.
  [[nodiscard]] static Result<std::unique_ptr<ServiceLog>> start(const Config& config);

  /// Flushes and stops the asynchronous logger; nothing may log afterwards.
  ~ServiceLog();
  ServiceLog(const ServiceLog&) = delete;
  ServiceLog& operator=(const ServiceLog&) = delete;

  /// Sets the level of `config.log`, and when its file, console, size or count changed, opens
  /// the new sinks and swaps them in. A file that cannot be opened is an error and leaves the
  /// running sinks in place (the level is set regardless). The state directory stays the one
  /// the log started with.
  [[nodiscard]] Status reconfigure(const Config::Log& log);

 private:
  ServiceLog(std::filesystem::path state_dir, Config::Log log,
             std::shared_ptr<spdlog::sinks::dist_sink_mt> sinks,
             std::shared_ptr<spdlog::logger> logger);

  std::filesystem::path state_dir_;
  Config::Log log_;
  /// What the logger writes to; its sinks are replaced under its own lock, so that a reload
  /// never swaps the default logger under a thread that is logging.
  std::shared_ptr<spdlog::sinks::dist_sink_mt> sinks_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace wctmon::app
