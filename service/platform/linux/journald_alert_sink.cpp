#include "platform/linux/journald_alert_sink.h"

#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace wctmon::linux_platform {
namespace {

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

}  // namespace

bool journaldAvailable() { return ::access("/run/systemd/journal/socket", W_OK) == 0; }

void JournaldAlertSink::send(const Alert& alert) {
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
  ::sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
}

SyslogAlertSink::SyslogAlertSink() { ::openlog("wctmon", LOG_PID | LOG_NDELAY, LOG_DAEMON); }

SyslogAlertSink::~SyslogAlertSink() { ::closelog(); }

void SyslogAlertSink::send(const Alert& alert) {
  std::string line = alert.message;
  line += std::string(" [MESSAGE_ID=") + messageId(alert.kind);
  for (const auto& [name, value] : alert.fields) line += " " + name + "=" + value;
  line += "]";
  ::syslog(priorityOf(alert.severity), "%s", line.c_str());
}

}  // namespace wctmon::linux_platform
