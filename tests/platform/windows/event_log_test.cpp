// The Event Log's side of alerts: every alert kind's event formatted with FormatMessageW from the
// message table compiled into wctmond.exe (the event source's message file), as Event Viewer and
// Get-WinEvent format it; the insertion strings and the incident data; the sink's route and a
// real ReportEventW. (Wine's ReportEventW stores nothing: what is proven here is the table, the
// ids and the strings.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "platform/windows/event_log_alert_sink.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

/// wctmond.exe, built beside this test, loaded as data: its message table only.
class MessageFile {
 public:
  MessageFile() {
    std::wstring self(MAX_PATH, L'\0');
    self.resize(::GetModuleFileNameW(nullptr, self.data(), static_cast<DWORD>(self.size())));
    const auto path = std::filesystem::path(self).parent_path() / L"wctmond.exe";
    module_ = ::LoadLibraryExW(path.c_str(), nullptr,
                               LOAD_LIBRARY_AS_DATAFILE | LOAD_LIBRARY_AS_IMAGE_RESOURCE);
  }
  ~MessageFile() {
    if (module_ != nullptr) ::FreeLibrary(module_);
  }
  MessageFile(const MessageFile&) = delete;
  MessageFile& operator=(const MessageFile&) = delete;
  [[nodiscard]] HMODULE get() const { return module_; }

  /// The message `id` with `strings` inserted, as UTF-8; "" when the table has no such message.
  [[nodiscard]] std::string format(DWORD id, const std::vector<std::wstring>& strings = {}) const {
    std::vector<DWORD_PTR> args;
    for (const auto& s : strings) args.push_back(reinterpret_cast<DWORD_PTR>(s.c_str()));
    wchar_t* text = nullptr;
    const DWORD flags = FORMAT_MESSAGE_FROM_HMODULE | FORMAT_MESSAGE_ALLOCATE_BUFFER |
                        FORMAT_MESSAGE_ARGUMENT_ARRAY |
                        (strings.empty() ? FORMAT_MESSAGE_IGNORE_INSERTS : 0);
    const DWORD n = ::FormatMessageW(flags, module_, id, MAKELANGID(LANG_ENGLISH, SUBLANG_DEFAULT),
                                     reinterpret_cast<wchar_t*>(&text), 0,
                                     reinterpret_cast<va_list*>(args.data()));
    std::string out = n == 0 ? std::string() : toUtf8(std::wstring_view(text, n));
    if (text != nullptr) ::LocalFree(text);
    return out;
  }

 private:
  HMODULE module_ = nullptr;
};

std::shared_ptr<const Incident> deadlockIncident() {
  auto i = std::make_shared<Incident>();
  i->id = 7;
  i->kind = IncidentKind::kDeadlock;
  i->process = ProcessIdentity{Pid{4242}, 1};
  i->process_name = "ledger.exe";
  i->target = "ledger";
  i->threads = {ThreadRef{Pid{4242}, Tid{10}}, ThreadRef{Pid{4242}, Tid{11}}};
  i->summary = "deadlock of 2 threads in ledger.exe (pid 4242): [4242:10] flush, [4242:11] audit";
  return i;
}

Alert incidentAlert(AlertKind kind, std::string message) {
  Alert a;
  a.kind = kind;
  a.message = std::move(message);
  a.target = "ledger";
  a.fields = {{"INCIDENT_ID", "7"}, {"INCIDENT_KIND", "deadlock"},
              {"PID", "4242"},      {"PROCESS", "ledger.exe"},
              {"PIDS", "4242"},     {"THREADS", "4242:10 4242:11"}};
  a.incident = deadlockIncident();
  return a;
}

Alert serviceAlert(AlertKind kind, std::vector<std::pair<std::string, std::string>> fields) {
  Alert a;
  a.kind = kind;
  a.message = "service alert";
  a.fields = std::move(fields);
  return a;
}

struct Expected {
  Alert alert;
  DWORD id;
  WORD type;
  WORD category;
  std::string text;  // the formatted message, line breaks as "\r\n"
};

std::vector<Expected> everyKind() {
  auto failed = incidentAlert(AlertKind::kCaptureFailed, "no evidence");
  failed.fields.emplace_back("REASON", "access denied (error 5)");
  const std::string full =
      "C:\\ProgramData\\wctmon\\incidents.db: cannot store incident 7: database or disk is full";
  auto store_fault = serviceAlert(AlertKind::kStoreFault, {{"REASON", full}});
  store_fault.message = "incidents cannot be written: " + full +
                        "; they wait in memory and are written when the store takes them again";
  auto store_recovered = serviceAlert(AlertKind::kStoreRecovered, {});
  store_recovered.message =
      "the incident store takes writes again; every incident change that waited is written";
  return {
      {incidentAlert(AlertKind::kDeadlockDetected, deadlockIncident()->summary), 2000,
       EVENTLOG_ERROR_TYPE, 2,
       "Deadlock in ledger.exe (pid 4242): threads 4242:10 4242:11 wait on each other, and none "
       "of them can go on.\r\n\r\nIncident 7: deadlock of 2 threads in ledger.exe (pid 4242): "
       "[4242:10] flush, [4242:11] audit\r\n\r\nDump: none taken\r\n\r\nThe incident, with "
       "its evidence, is this event's "
       "data (JSON); wctctl incident 7 shows it.\r\n"},
      {incidentAlert(AlertKind::kHangDetected, "hang of thread 4242:10 in ledger.exe"), 2001,
       EVENTLOG_WARNING_TYPE, 2,
       "Hang in ledger.exe (pid 4242): threads 4242:10 4242:11 have waited past the hang "
       "threshold.\r\n\r\nIncident 7: hang of thread 4242:10 in ledger.exe\r\n\r\nDump: none "
       "taken\r\n\r\nThe incident "
       "is this event's data (JSON); wctctl incident 7 shows it.\r\n"},
      {incidentAlert(AlertKind::kIncidentResolved, "deadlock resolved (the cycle is gone)"), 2002,
       EVENTLOG_INFORMATION_TYPE, 2,
       "Incident 7 in ledger.exe (pid 4242), threads 4242:10 4242:11, is resolved: deadlock "
       "resolved (the cycle is gone)\r\n"},
      {failed, 3000, EVENTLOG_WARNING_TYPE, 3,
       "No evidence of incident 7 in ledger.exe (pid 4242) could be captured from threads "
       "4242:10 4242:11: access denied (error 5)\r\n"},
      {serviceAlert(AlertKind::kServiceStarted,
                    {{"VERSION", "0.1.0"}, {"CONFIG", "C:\\ProgramData\\wctmon\\wctmon.json"}}),
       1000, EVENTLOG_INFORMATION_TYPE, 1,
       "The wctmon service 0.1.0 started with the configuration "
       "C:\\ProgramData\\wctmon\\wctmon.json.\r\n"},
      {serviceAlert(AlertKind::kServiceStopped,
                    {{"REASON", "the service control manager asked it to stop"}}),
       1001, EVENTLOG_INFORMATION_TYPE, 1,
       "The wctmon service stopped (the service control manager asked it to stop).\r\n"},
      {serviceAlert(AlertKind::kServiceFailed, {{"REASON", "cannot open the store"}}), 1002,
       EVENTLOG_ERROR_TYPE, 1, "The wctmon service could not run: cannot open the store\r\n"},
      {serviceAlert(AlertKind::kConfigError,
                    {{"CONFIG", "C:\\ProgramData\\wctmon\\wctmon.json"},
                     {"REASON", "/sampling/interval_ms: must be at least 10"}}),
       1003, EVENTLOG_ERROR_TYPE, 4,
       "The configuration C:\\ProgramData\\wctmon\\wctmon.json was refused: "
       "/sampling/interval_ms: must be at least 10\r\n\r\nThe service keeps running with the "
       "configuration it had.\r\n"},
      {serviceAlert(
           AlertKind::kWaitChainSourceUnavailable,
           {{"SOURCE", "windows-wct"}, {"REASON", "OpenThreadWaitChainSession: not supported"}}),
       1004, EVENTLOG_WARNING_TYPE, 1,
       "Wait chains cannot be read on this machine (windows-wct): OpenThreadWaitChainSession: "
       "not supported\r\n\r\nThe service runs on, but it detects no deadlock or hang until this "
       "is mended.\r\n"},
      {store_fault, 1005, EVENTLOG_ERROR_TYPE, 1,
       "The incident store failed: incidents cannot be written: C:\\ProgramData\\wctmon\\"
       "incidents.db: cannot store incident 7: database or disk is full; they wait in memory "
       "and are written when the store takes them again\r\n"},
      {store_recovered, 1006, EVENTLOG_INFORMATION_TYPE, 1,
       "The incident store works again: the incident store takes writes again; every incident "
       "change that waited is written\r\n"},
  };
}

TEST(EventLog, EveryAlertKindIsAMessageOfTheTableWithItsTypeCategoryAndStrings) {
  MessageFile messages;
  ASSERT_NE(messages.get(), nullptr) << "wctmond.exe not found beside the test";
  for (const auto& e : everyKind()) {
    const auto record = eventRecord(e.alert);
    SCOPED_TRACE(e.id);
    EXPECT_EQ(record.id, e.id);
    EXPECT_EQ(record.type, e.type);
    EXPECT_EQ(record.category, e.category);
    EXPECT_EQ(messages.format(record.id, record.strings), e.text);
  }
}

TEST(EventLog, TheCategoriesAreNamedByTheTable) {
  MessageFile messages;
  EXPECT_EQ(messages.format(1), "Service\r\n");
  EXPECT_EQ(messages.format(2), "Incident\r\n");
  EXPECT_EQ(messages.format(3), "Capture\r\n");
  EXPECT_EQ(messages.format(4), "Configuration\r\n");
  EXPECT_EQ(kEventCategoryCount, 4U);
  EXPECT_EQ(messages.format(5), "");
}

TEST(EventLog, TheIncidentIsTheEventsDataAsJson) {
  const auto record = eventRecord(incidentAlert(AlertKind::kDeadlockDetected, "x"));
  EXPECT_EQ(record.data.front(), '{');
  EXPECT_NE(record.data.find("\"process_name\": \"ledger.exe\""), std::string::npos) << record.data;
  EXPECT_NE(record.data.find("\"summary\":"), std::string::npos);
  EXPECT_TRUE(eventRecord(serviceAlert(AlertKind::kServiceStarted, {})).data.empty());
}

TEST(EventLog, TooMuchEvidenceLeavesTheChainsAndANameOfAnyLengthStillMakesAnEvent) {
  auto big = std::make_shared<Incident>(*deadlockIncident());
  ThreadCapture capture;
  capture.captured = true;
  for (int i = 0; i < 2000; ++i) {
    StackFrame frame;
    frame.function = "frame_" + std::to_string(i);
    capture.frames.push_back(frame);
  }
  big->evidence = {capture, capture};
  auto alert = incidentAlert(AlertKind::kDeadlockDetected, big->summary);
  alert.incident = big;
  alert.fields[3].second = std::string(10000, 'n');  // PROCESS
  const auto record = eventRecord(alert);
  EXPECT_LE(record.data.size(), 32U * 1024U);
  EXPECT_NE(record.data.find("ledger.exe"), std::string::npos);
  EXPECT_EQ(record.data.find("frame_1"), std::string::npos);  // the evidence left out
  EXPECT_EQ(record.strings[0].size(), 2048U);
  EXPECT_EQ(record.strings[0].back(), L'\u2026');
}

TEST(EventLog, WhatAProcessChoseIsInertInTheStrings) {
  auto alert = incidentAlert(AlertKind::kDeadlockDetected, "x");
  alert.fields[3].second = "evil\x1b[31m\nname";
  const auto record = eventRecord(alert);
  EXPECT_EQ(toUtf8(record.strings[0]), "evil\\x1b[31m\\x0aname");
}

TEST(EventLog, TheSinkReportsToTheApplicationLogAndSaysWhere) {
  EventLogAlertSink sink;
  auto route = sink.route(AlertSinkKind::kEventLog);
  EXPECT_TRUE(route.delivered);
  EXPECT_EQ(route.description.rfind("alerts go to the Event Log (Application, source wctmon)", 0),
            0U)
      << route.description;
  route = sink.route(AlertSinkKind::kJournald);
  EXPECT_TRUE(route.delivered);
  EXPECT_NE(route.description.find("sink journald, which is Linux's"), std::string::npos)
      << route.description;
  for (const auto& e : everyKind()) EXPECT_TRUE(sink.send(e.alert).ok());  // ReportEventW
  route = sink.route(AlertSinkKind::kNone);
  EXPECT_EQ(route.description, "alerts are off (alerts.sink is \"none\")");
  EXPECT_FALSE(sink.send(everyKind().front().alert).ok());  // off: sends nothing
}

}  // namespace
}  // namespace wctmon::windows_platform
