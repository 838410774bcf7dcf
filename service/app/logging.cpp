#include "app/logging.h"

#include <spdlog/async.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "os/owned_files.h"
#include "os/system_dirs.h"
#include "wire/terminal_text.h"

namespace wctmon::app {
namespace {

constexpr const char* kPattern = "%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v";
/// The journal stamps lines itself and takes their priority from a "<N>" prefix.
constexpr const char* kJournalPattern = "%v";

/// The syslog priority of a level, as the journal reads it from a "<N>" prefix.
int syslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

/// Formats messages with kPattern (or, for the journal, its priority and the message alone),
/// every control character, bidirectional control and ill-formed UTF-8 sequence made visible
/// and inert ("\x1b"): names that monitored processes chose for themselves reach the log, and
/// the log reaches terminals. A newline too, so that nobody can write a line of their own into
/// the log.
class InertFormatter final : public spdlog::formatter {
 public:
  explicit InertFormatter(bool journal)
      : journal_(journal), pattern_(journal ? kJournalPattern : kPattern) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    if (journal_) {
      const char prefix[] = {'<', static_cast<char>('0' + syslogPriority(msg.level)), '>'};
      dest.append(prefix, prefix + sizeof(prefix));
    }
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    // Plain ASCII, the usual message, is written as it is.
    const bool plain = std::all_of(payload.begin(), payload.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
    });
    if (plain) {
      pattern_.format(msg, dest);
      return;
    }
    const std::string safe = wire::terminalSafe(payload, false);
    auto copy = msg;
    copy.payload = safe;
    pattern_.format(copy, dest);
  }
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<InertFormatter>(journal_);
  }

 private:
  bool journal_;
  spdlog::pattern_formatter pattern_;
};

/// What keeps each log file (the first, and each made by a rotation) the service's own: the
/// directories between the state directory and the file the service's (no link among them, and
/// nobody else writes in them), the file made 0640 (0600 under the service's umask) without
/// following a link at its name, or found a regular file of the service's with no other name and
/// narrowed to 0640; and the file spdlog then opens is that one. Throws spdlog_ex otherwise, as
/// spdlog does when it cannot open a file.
spdlog::file_event_handlers privateFileHandlers(const std::filesystem::path& state_dir) {
  auto checked = std::make_shared<std::optional<FileIdentity>>();
  spdlog::file_event_handlers handlers;
  handlers.before_open = [state_dir, checked](const spdlog::filename_t& name) {
    const std::filesystem::path file(name);
    for (auto dir = file.parent_path(); dir != state_dir && dir.has_relative_path();
         dir = dir.parent_path()) {
      if (auto why = checkOwnedDirectory(dir); !why.empty()) {
        throw spdlog::spdlog_ex("the directory " + dir.string() + " of the log: " + why);
      }
    }
    auto owned = prepareOwnedFile(file, 0640);
    if (!owned.why_not.empty()) throw spdlog::spdlog_ex("the log " + name + ": " + owned.why_not);
    *checked = owned.identity;
  };
  handlers.after_open = [checked](const spdlog::filename_t& name, std::FILE* opened) {
    if (openFileIdentity(fileno(opened)) != *checked) {
      throw spdlog::spdlog_ex("the log " + name + " was replaced while it was opened");
    }
  };
  return handlers;
}

/// The sinks `log` asks for; throws spdlog_ex when the file cannot be opened. Under systemd,
/// standard error is the journal: its lines are the journal's own (priority, no timestamp) and
/// there is no file unless one is configured.
std::vector<spdlog::sink_ptr> makeSinks(const std::filesystem::path& state_dir,
                                        const Config::Log& log) {
  const bool journal = stderrIsJournal();
  std::vector<spdlog::sink_ptr> sinks;
  if (log.console) {
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    sinks.back()->set_formatter(std::make_unique<InertFormatter>(journal));
  }
  if (const auto name = log.effectiveFile(journal); !name.empty()) {
    const std::filesystem::path file =
        std::filesystem::path(name).is_absolute() ? std::filesystem::path(name) : state_dir / name;
    sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
        file.string(), log.max_file_bytes, log.max_files, false, privateFileHandlers(state_dir)));
    sinks.back()->set_formatter(std::make_unique<InertFormatter>(false));
  }
  // The distributing sink hands each message to these as it is; each formats it itself.
  return sinks;
}

bool sameSinks(const Config::Log& a, const Config::Log& b) {
  return a.file == b.file && a.console == b.console && a.max_file_bytes == b.max_file_bytes &&
         a.max_files == b.max_files;
}

}  // namespace

ServiceLog::ServiceLog(std::filesystem::path state_dir, Config::Log log,
                       std::shared_ptr<spdlog::sinks::dist_sink_mt> sinks,
                       std::shared_ptr<spdlog::logger> logger)
    : state_dir_(std::move(state_dir)),
      log_(std::move(log)),
      sinks_(std::move(sinks)),
      logger_(std::move(logger)) {}

Result<std::unique_ptr<ServiceLog>> ServiceLog::start(const Config& config) {
  try {
    auto sinks =
        std::make_shared<spdlog::sinks::dist_sink_mt>(makeSinks(config.state_dir, config.log));
    spdlog::init_thread_pool(config.log.queue_size, 1);
    auto logger = std::make_shared<spdlog::async_logger>(
        "wctmon", sinks, spdlog::thread_pool(), spdlog::async_overflow_policy::overrun_oldest);
    logger->set_level(spdlog::level::from_str(config.log.level));
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    spdlog::flush_every(std::chrono::seconds(1));
    return std::unique_ptr<ServiceLog>(
        new ServiceLog(config.state_dir, config.log, std::move(sinks), std::move(logger)));
  } catch (const spdlog::spdlog_ex& e) {
    return makeError(ErrorCode::kIo, std::string("cannot set up logging: ") + e.what());
  }
}

ServiceLog::~ServiceLog() {
  logger_->flush();
  spdlog::shutdown();
}

Status ServiceLog::reconfigure(const Config::Log& log) {
  logger_->set_level(spdlog::level::from_str(log.level));
  log_.level = log.level;
  if (sameSinks(log_, log)) return std::monostate{};
  try {
    auto sinks = makeSinks(state_dir_, log);
    // The swap happens between two messages under the distributing sink's lock: messages still
    // queued from before the reload go to the new sinks, none is split or lost.
    sinks_->flush();
    sinks_->set_sinks(std::move(sinks));
  } catch (const spdlog::spdlog_ex& e) {
    return makeError(ErrorCode::kIo, std::string("cannot open the new log: ") + e.what());
  }
  log_ = log;
  return std::monostate{};
}

}  // namespace wctmon::app
