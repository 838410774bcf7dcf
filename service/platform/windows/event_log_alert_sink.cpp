#include "platform/windows/event_log_alert_sink.h"

#include <algorithm>
#include <string_view>

#include "platform/windows/wctmon_messages.h"
#include "platform/windows/win_text.h"
#include "wire/json_writer.h"
#include "wire/terminal_text.h"

namespace wctmon::windows_platform {
namespace {

/// ReportEventW takes up to 32K characters a string and about 61 KB for all of them: a name or a
/// chain of any length must still make an event.
constexpr std::size_t kMaxStringChars = 2048;
/// The event's data: an incident of a few hundred threads with their evidence fits.
constexpr std::size_t kMaxDataBytes = 32 * 1024;

std::string_view fieldOf(const Alert& alert, std::string_view name) {
  for (const auto& [key, value] : alert.fields) {
    if (key == name) return value;
  }
  return {};
}

/// An insertion string: what a process chose (its name, its threads' names in a chain) is made
/// visible and inert, as in the service's log, then bounded.
std::wstring insertion(std::string_view text) {
  auto wide = toWide(wire::terminalSafe(text, /*keep_newlines=*/false));
  if (wide.size() > kMaxStringChars) {
    wide.resize(kMaxStringChars - 1);
    // Not half a surrogate pair at the end.
    if (!wide.empty() && wide.back() >= 0xD800 && wide.back() <= 0xDBFF) wide.pop_back();
    wide += L'\u2026';
  }
  return wide;
}

struct EventKind {
  DWORD id;
  WORD type;
  WORD category;
};

EventKind eventKind(AlertKind kind) {
  switch (kind) {
    case AlertKind::kDeadlockDetected:
      return {WCTMON_EVENT_DEADLOCK, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kHangDetected:
      return {WCTMON_EVENT_HANG, EVENTLOG_WARNING_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kUnresponsiveDetected:
      return {WCTMON_EVENT_UNRESPONSIVE, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kBusyDetected:
      return {WCTMON_EVENT_BUSY, EVENTLOG_WARNING_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kStallDetected:
      return {WCTMON_EVENT_STALL, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kServiceHungDetected:
      return {WCTMON_EVENT_SERVICE_HUNG, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kWindowHungDetected:
      return {WCTMON_EVENT_WINDOW_HUNG, EVENTLOG_WARNING_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kIncidentResolved:
      return {WCTMON_EVENT_RESOLVED, EVENTLOG_INFORMATION_TYPE, WCTMON_CATEGORY_INCIDENT};
    case AlertKind::kCaptureFailed:
      return {WCTMON_EVENT_CAPTURE_FAILED, EVENTLOG_WARNING_TYPE, WCTMON_CATEGORY_CAPTURE};
    case AlertKind::kServiceStarted:
      return {WCTMON_EVENT_SERVICE_STARTED, EVENTLOG_INFORMATION_TYPE, WCTMON_CATEGORY_SERVICE};
    case AlertKind::kServiceStopped:
      return {WCTMON_EVENT_SERVICE_STOPPED, EVENTLOG_INFORMATION_TYPE, WCTMON_CATEGORY_SERVICE};
    case AlertKind::kServiceFailed:
      return {WCTMON_EVENT_SERVICE_FAILED, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_SERVICE};
    case AlertKind::kConfigError:
      return {WCTMON_EVENT_CONFIG_ERROR, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_CONFIGURATION};
    case AlertKind::kWaitChainSourceUnavailable:
      return {WCTMON_EVENT_WAIT_CHAINS_UNAVAILABLE, EVENTLOG_WARNING_TYPE, WCTMON_CATEGORY_SERVICE};
    case AlertKind::kStoreFault:
      return {WCTMON_EVENT_STORE_FAULT, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_SERVICE};
    case AlertKind::kStoreRecovered:
      return {WCTMON_EVENT_STORE_RECOVERED, EVENTLOG_INFORMATION_TYPE, WCTMON_CATEGORY_SERVICE};
  }
  return {WCTMON_EVENT_SERVICE_FAILED, EVENTLOG_ERROR_TYPE, WCTMON_CATEGORY_SERVICE};
}

/// The message's insertion strings (%1, %2, ...) of `alert`, as wctmon_messages.mc numbers them.
std::vector<std::string> insertions(const Alert& alert) {
  const auto field = [&](std::string_view name) { return std::string(fieldOf(alert, name)); };
  switch (alert.kind) {
    case AlertKind::kDeadlockDetected:
    case AlertKind::kHangDetected:
    case AlertKind::kUnresponsiveDetected:
    case AlertKind::kBusyDetected:
    case AlertKind::kStallDetected:
    case AlertKind::kServiceHungDetected:
    case AlertKind::kWindowHungDetected:
    case AlertKind::kIncidentResolved:
    case AlertKind::kCaptureFailed: {
      const bool failed = alert.kind == AlertKind::kCaptureFailed;
      std::string dump = "none taken";
      if (!field("DUMP").empty()) {
        dump = field("DUMP") + " (" + field("DUMP_BYTES") + " bytes, SHA-256 " +
               field("DUMP_SHA256") + ")";
      } else if (!field("DUMP_ERROR").empty()) {
        dump = "none (" + field("DUMP_ERROR") + ")";
      }
      return {field("PROCESS"),
              field("PID"),
              field("THREADS"),
              field("INCIDENT_ID"),
              failed ? field("REASON") : alert.message,
              dump};
    }
    case AlertKind::kServiceStarted:
      return {field("VERSION"), field("CONFIG")};
    case AlertKind::kServiceStopped:
      return {field("REASON")};
    case AlertKind::kServiceFailed:
      return {fieldOf(alert, "REASON").empty() ? alert.message : field("REASON")};
    case AlertKind::kConfigError:
      return {field("CONFIG"), field("REASON")};
    case AlertKind::kWaitChainSourceUnavailable:
      return {field("SOURCE"), field("REASON")};
    case AlertKind::kStoreFault:
    case AlertKind::kStoreRecovered:
      return {alert.message};
  }
  return {alert.message};
}

std::string incidentData(const Incident& incident) {
  auto json = wire::incidentToJson(incident);
  if (json.size() <= kMaxDataBytes) return json;
  // The chains are what the event is about; the evidence is in the store (wctctl incident).
  Incident lighter = incident;
  lighter.evidence.clear();
  json = wire::incidentToJson(lighter);
  return json.size() <= kMaxDataBytes ? json : std::string();
}

bool sourceRegistered() {
  HKEY key = nullptr;
  if (::RegOpenKeyExW(HKEY_LOCAL_MACHINE, kEventSourceKey, 0, KEY_QUERY_VALUE, &key) !=
      ERROR_SUCCESS) {
    return false;
  }
  const bool has_messages = ::RegQueryValueExW(key, L"EventMessageFile", nullptr, nullptr, nullptr,
                                               nullptr) == ERROR_SUCCESS;
  ::RegCloseKey(key);
  return has_messages;
}

}  // namespace

EventRecord eventRecord(const Alert& alert) {
  const auto kind = eventKind(alert.kind);
  EventRecord record;
  record.id = kind.id;
  record.type = kind.type;
  record.category = kind.category;
  for (const auto& s : insertions(alert)) record.strings.push_back(insertion(s));
  if (alert.incident) record.data = incidentData(*alert.incident);
  return record;
}

EventLogAlertSink::~EventLogAlertSink() {
  if (source_ != nullptr) ::DeregisterEventSource(source_);
}

AlertRoute EventLogAlertSink::route(AlertSinkKind kind) {
  std::lock_guard lock(mutex_);
  on_ = kind != AlertSinkKind::kNone;
  if (!on_) return {"alerts are off (alerts.sink is \"none\")", true};
  if (source_ == nullptr) {
    source_ = ::RegisterEventSourceW(nullptr, kEventSource);
    if (source_ == nullptr) {
      on_ = false;
      return {"alerts are NOT delivered: the Event Log refuses the source wctmon (" +
                  lastErrorText(::GetLastError()) +
                  "); incidents are still recorded (wctctl incidents)",
              false};
    }
  }
  std::string description = "alerts go to the Event Log (Application, source wctmon)";
  if (kind != AlertSinkKind::kEventLog) {
    description += std::string(": sink ") + std::string(alertSinkName(kind)) + ", which is Linux's";
  }
  if (!sourceRegistered()) {
    description +=
        "; the source is not registered on this machine (the MSI registers it), so Event "
        "Viewer shows the events' data but not their text";
  }
  return {description, true};
}

Status EventLogAlertSink::send(const Alert& alert) {
  const auto record = eventRecord(alert);
  std::vector<const wchar_t*> strings;
  strings.reserve(record.strings.size());
  for (const auto& s : record.strings) strings.push_back(s.c_str());
  std::lock_guard lock(mutex_);
  if (!on_) return makeError(ErrorCode::kUnsupported, "the Event Log takes no alerts here");
  // A failure (the log full and not overwriting, say) is counted against this sink; the incident
  // is in the store either way.
  if (!::ReportEventW(source_, record.type, record.category, record.id, nullptr,
                      static_cast<WORD>(strings.size()), static_cast<DWORD>(record.data.size()),
                      strings.data(),
                      record.data.empty() ? nullptr : const_cast<char*>(record.data.data()))) {
    return makeError(ErrorCode::kIo,
                     "the Event Log refused the event: " + lastErrorText(::GetLastError()));
  }
  return std::monostate{};
}

}  // namespace wctmon::windows_platform
