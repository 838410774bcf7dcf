#pragma once

#include <windows.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/ports/alert_sink.h"
#include "platform/service_factory.h"

namespace wctmon::windows_platform {

/// The event source of wctmon's alerts in the Application log.
inline constexpr const wchar_t* kEventSource = L"wctmon";
/// Where the event source is registered (its message files, categories and types).
inline constexpr const wchar_t* kEventSourceKey =
    L"SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\wctmon";
/// The number of categories in the message table (installer/windows/wctmon_messages.mc).
inline constexpr DWORD kEventCategoryCount = 4;

/// One alert as ReportEventW takes it: an id of the message table, its type and category, the
/// insertion strings in the order the message numbers them, and the incident as JSON.
struct EventRecord {
  DWORD id = 0;
  WORD type = EVENTLOG_INFORMATION_TYPE;
  WORD category = 0;
  std::vector<std::wstring> strings;
  std::string data;
};

/// What `alert` is in the Event Log. Insertion strings are bounded (a name or a chain of any
/// length still makes an event), and so is the data: the incident without its evidence when the
/// whole is too long, nothing when even that is.
[[nodiscard]] EventRecord eventRecord(const Alert& alert);

/// Alerts as Event Log entries of the source "wctmon" (ReportEventW).
class EventLogAlertSink final : public SystemAlertSink {
 public:
  EventLogAlertSink() = default;
  ~EventLogAlertSink() override;
  EventLogAlertSink(const EventLogAlertSink&) = delete;
  EventLogAlertSink& operator=(const EventLogAlertSink&) = delete;

  /// The Event Log for any sink but "none" (journald and syslog are Linux's): said so when
  /// another was asked for, and when the source is not registered here (the events are kept,
  /// but Event Viewer cannot show their text until it is).
  [[nodiscard]] AlertRoute route(AlertSinkKind kind) override;
  Status send(const Alert& alert) override;

 private:
  std::mutex mutex_;
  bool on_ = false;
  HANDLE source_ = nullptr;  // RegisterEventSourceW's, while on_
};

}  // namespace wctmon::windows_platform
