#include "platform/linux/journald_alert_sink.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "os/unique_fd.h"

namespace wctmon::linux_platform {
namespace {

/// syslog(3)'s connection is one per process: opened by the first sink, closed by the last.
std::mutex syslog_users_mutex;
int syslog_users = 0;

int priorityOf(AlertSeverity severity) {
  switch (severity) {
    case AlertSeverity::kInfo:
      return LOG_INFO;
    case AlertSeverity::kWarning:
      return LOG_WARNING;
    case AlertSeverity::kError:
      return LOG_ERR;
    case AlertSeverity::kCritical:
      return LOG_CRIT;
  }
  return LOG_INFO;
}

/// 0 when a socket of `type` connects to `path`, else the errno of the failure.
int connectError(const char* path, int type) {
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path, sizeof(address.sun_path) - 1);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
    return errno;
  return 0;
}

/// The configuration's name of `kind`, with what it is on Linux when it is not Linux's.
std::string nameOf(AlertSinkKind kind) {
  std::string name(alertSinkName(kind));
  return kind == AlertSinkKind::kEventLog ? name + ", which is Windows's" : name;
}

}  // namespace

bool socketListening(const char* path) {
  // syslog(3) itself tries a datagram socket, then a stream one (some syslog daemons listen so).
  const int error = connectError(path, SOCK_DGRAM);
  return error == 0 || (error == EPROTOTYPE && connectError(path, SOCK_STREAM) == 0);
}

AlertDestination chooseAlertDestination(AlertSinkKind wanted, bool journald, bool syslog) {
  switch (wanted) {
    case AlertSinkKind::kNone:
    case AlertSinkKind::kAlertmanager:  // HTTP receivers have sinks of their own
    case AlertSinkKind::kWebhook:
      return AlertDestination::kNowhere;
    case AlertSinkKind::kJournald:
    case AlertSinkKind::kEventLog:  // the Event Log's place on Linux: a configuration shared
                                    // with Windows still alerts
      if (journald) return AlertDestination::kJournald;
      return syslog ? AlertDestination::kSyslog : AlertDestination::kNowhere;
    case AlertSinkKind::kSyslog:
      if (syslog) return AlertDestination::kSyslog;
      return journald ? AlertDestination::kJournald : AlertDestination::kNowhere;
  }
  return AlertDestination::kNowhere;
}

Status JournaldAlertSink::send(const Alert& alert) {
  std::vector<std::string> fields;
  fields.push_back("MESSAGE=" + alert.message);
  fields.push_back(std::string("MESSAGE_ID=") + messageId(alert.kind));
  fields.push_back("PRIORITY=" + std::to_string(priorityOf(alert.severity)));
  fields.push_back("SYSLOG_IDENTIFIER=wctmon");
  if (!alert.target.empty()) fields.push_back("WCTMON_TARGET=" + alert.target);
  for (const auto& [name, value] : alert.fields) fields.push_back("WCTMON_" + name + "=" + value);
  std::vector<iovec> iov;
  iov.reserve(fields.size());
  for (auto& f : fields) iov.push_back(iovec{f.data(), f.size()});
  const int sent = ::sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
  if (sent < 0) {
    return makeError(ErrorCode::kIo,
                     std::string("journald refused the entry: ") + std::strerror(-sent));
  }
  return std::monostate{};
}

SyslogAlertSink::SyslogAlertSink() {
  std::lock_guard lock(syslog_users_mutex);
  if (syslog_users++ == 0) ::openlog("wctmon", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

SyslogAlertSink::~SyslogAlertSink() {
  std::lock_guard lock(syslog_users_mutex);
  if (--syslog_users == 0) ::closelog();
}

Status SyslogAlertSink::send(const Alert& alert) {
  std::string line = alert.message;
  line += std::string(" [MESSAGE_ID=") + messageId(alert.kind);
  if (!alert.target.empty()) line += " TARGET=" + alert.target;
  for (const auto& [name, value] : alert.fields) line += " " + name + "=" + value;
  line += "]";
  // syslog(3) says nothing of a line that did not get through.
  ::syslog(priorityOf(alert.severity), "%s", line.c_str());
  return std::monostate{};
}

AlertRoute SystemLogAlertSink::route(AlertSinkKind kind) {
  const bool journald = socketListening(kJournaldSocket);
  const bool syslog = socketListening(kSyslogSocket);
  const auto destination = chooseAlertDestination(kind, journald, syslog);
  {
    std::lock_guard lock(mutex_);
    destination_ = destination;
    if (destination != AlertDestination::kSyslog) {
      syslog_.reset();
    } else if (!syslog_) {
      syslog_.emplace();
    }
  }
  if (kind == AlertSinkKind::kNone) return {"alerts are off (alerts.sink: none)", true};
  const std::string journald_at = std::string("journald (") + kJournaldSocket + ")";
  const std::string syslog_at = std::string("syslog (") + kSyslogSocket + ")";
  const std::string asked = "sink " + nameOf(kind);
  switch (destination) {
    case AlertDestination::kJournald:
      if (kind == AlertSinkKind::kJournald) return {"alerts go to " + journald_at, true};
      if (kind == AlertSinkKind::kEventLog)
        return {"alerts go to " + journald_at + ": " + asked, true};
      return {"alerts go to " + journald_at + ": " + asked + ", but nothing listens on " +
                  kSyslogSocket,
              true};
    case AlertDestination::kSyslog:
      if (kind == AlertSinkKind::kSyslog) return {"alerts go to " + syslog_at, true};
      return {"alerts go to " + syslog_at + ": " + asked + ", but journald is not running here (" +
                  kJournaldSocket + ")",
              true};
    case AlertDestination::kNowhere:
      break;
  }
  return {"alerts are NOT delivered: " + asked + ", but neither " + journald_at + " nor " +
              syslog_at + " is running here; incidents are still recorded (wctmon incidents)",
          false};
}

Status SystemLogAlertSink::send(const Alert& alert) {
  std::lock_guard lock(mutex_);
  switch (destination_) {
    case AlertDestination::kJournald:
      return journald_.send(alert);
    case AlertDestination::kSyslog:
      return syslog_->send(alert);
    case AlertDestination::kNowhere:
      break;
  }
  return makeError(ErrorCode::kUnsupported, "neither journald nor syslog is running here");
}

}  // namespace wctmon::linux_platform
