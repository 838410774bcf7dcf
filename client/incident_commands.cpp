// The incidents verbs: the list (paged through), one incident whole, and the live stream.
#include <iostream>
#include <sstream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/interrupt.h"
#include "client/table.h"
#include "model/format.h"
#include "model/incident.h"
#include "wire/incident_text.h"
#include "wire/proto_convert.h"
#include "wire/text_report.h"

namespace wctmon::client {
namespace {

/// The service's largest page.
constexpr std::int64_t kMaxPage = 1000;

std::string kindOf(v1::IncidentKind kind) {
  const auto known = wire::fromProto(kind);
  return known ? toString(*known) : "?";
}

std::string stateOf(v1::IncidentState state) {
  return state == v1::INCIDENT_STATE_OPEN       ? "open"
         : state == v1::INCIDENT_STATE_RESOLVED ? "resolved"
                                                : "?";
}

/// "name", or "name +2" when the incident spans more processes.
std::string processesOf(const v1::Incident& i) {
  return withTitle(i.process_name(), i.processes_size() > 0 ? i.processes(0).title() : "") +
         (i.processes_size() > 1 ? " +" + std::to_string(i.processes_size() - 1) : "");
}

std::string ageOf(const google::protobuf::Timestamp& t, std::chrono::system_clock::time_point now) {
  return durationText(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - wire::fromTimestamp(t)));
}

void printIncidents(Session& session, const v1::ListIncidentsResponse& r) {
  std::vector<Table::Column> columns = {
      {"ID", false, true}, {"KIND"},         {"STATE"}, {"PID", false, true},
      {"PROCESS", true},   {"TARGET", true}, {"AGE"},   {"SUMMARY", true}};
  if (session.wide()) {
    columns.insert(columns.end() - 1, {{"OPENED"}, {"RESOLVED"}, {"THREADS"}});
  }
  Table table(columns);
  const auto now = std::chrono::system_clock::now();
  for (const auto& i : r.incidents()) {
    std::vector<std::string> row = {std::to_string(i.id()),    kindOf(i.kind()), stateOf(i.state()),
                                    std::to_string(i.pid()),   processesOf(i),   i.target(),
                                    ageOf(i.opened_at(), now), i.summary()};
    if (session.wide()) {
      std::vector<ThreadRef> threads;
      for (const auto& t : i.threads()) threads.push_back(wire::fromProto(t));
      row.insert(
          row.end() - 1,
          {wire::localTimeText(wire::fromTimestamp(i.opened_at())),
           i.has_resolved_at() ? wire::localTimeText(wire::fromTimestamp(i.resolved_at())) : "-",
           threadList(threads)});
    }
    table.add(std::move(row));
  }
  Session::print(table.render(session.wide()));
}

/// One event as a line: when, what happened, which incident.
std::string eventLine(const v1::IncidentEvent& e) {
  const auto& i = e.incident();
  const char* type = "?";
  auto at = i.updated_at();
  switch (e.type()) {
    case v1::IncidentEvent::TYPE_EXISTING:
      type = "open";
      at = i.opened_at();
      break;
    case v1::IncidentEvent::TYPE_OPENED:
      type = "opened";
      at = i.opened_at();
      break;
    case v1::IncidentEvent::TYPE_UPDATED:
      type = "updated";
      break;
    case v1::IncidentEvent::TYPE_RESOLVED:
      type = "resolved";
      if (i.has_resolved_at()) at = i.resolved_at();
      break;
    default:
      break;
  }
  std::string line = wire::localTimeText(wire::fromTimestamp(at)) + "  " + type + " #" +
                     std::to_string(i.id()) + " " + kindOf(i.kind()) + " pid " +
                     std::to_string(i.pid()) + " (" + processesOf(i) + ") target " + i.target() +
                     ": " + i.summary();
  if (e.type() == v1::IncidentEvent::TYPE_RESOLVED && !i.resolution().empty()) {
    line += " (" + i.resolution() + ")";
  }
  return line;
}

}  // namespace

int runIncidents(Session& session, const IncidentsArgs& args) {
  v1::ListIncidentsRequest request;
  if (args.state == "open") request.set_state(v1::INCIDENT_STATE_OPEN);
  if (args.state == "resolved") request.set_state(v1::INCIDENT_STATE_RESOLVED);
  if (const auto kind = incidentKindFromString(args.kind)) request.set_kind(wire::toProto(*kind));
  request.set_pid(args.pid);
  request.set_target(args.target);
  if (args.since) *request.mutable_since() = wire::toTimestamp(*args.since);
  // Pages until the limit or the last page; the page tokens keep the order stable while
  // incidents open meanwhile.
  v1::ListIncidentsResponse all;
  do {
    const auto left = args.limit == 0 ? kMaxPage : args.limit - all.incidents_size();
    request.set_page_size(static_cast<std::int32_t>(std::min(left, kMaxPage)));
    v1::ListIncidentsResponse page;
    if (!session.call(&v1::Monitor::Stub::ListIncidents, request, page)) return session.exitCode();
    for (auto& i : *page.mutable_incidents()) *all.add_incidents() = std::move(i);
    all.set_next_page_token(page.next_page_token());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty() && (args.limit == 0 || all.incidents_size() < args.limit));
  if (session.json()) {
    Session::printJson(all);
  } else if (all.incidents().empty()) {
    Session::print("no incidents\n");
  } else {
    printIncidents(session, all);
    if (!all.next_page_token().empty()) {
      Session::notice("(the " + std::to_string(all.incidents_size()) +
                      " most recent; --limit N shows more, --limit 0 all)\n");
    }
  }
  return kExitOk;
}

int runIncident(Session& session, std::int64_t id) {
  v1::GetIncidentRequest request;
  request.set_id(id);
  v1::Incident incident;
  if (!session.call(&v1::Monitor::Stub::GetIncident, request, incident)) return session.exitCode();
  if (session.json()) {
    Session::printJson(incident);
  } else {
    std::ostringstream out;
    wire::writeIncident(out, wire::fromProto(incident));
    Session::print(out.str());
  }
  return kExitOk;
}

int runWatch(Session& session) {
  const auto context = session.connection().context(/*streaming=*/true);
  InterruptWatch interrupt([&context] { context->TryCancel(); });
  auto reader = session.connection().monitor().WatchIncidents(context.get(), {});
  v1::IncidentEvent event;
  while (reader->Read(&event)) {
    if (session.json()) {
      Session::printJson(event, /*one_line=*/true);
    } else {
      std::ostringstream out;
      out << eventLine(event) << "\n";
      // The chains of what is still open; a resolution is its line alone.
      if (session.wide() && event.type() != v1::IncidentEvent::TYPE_RESOLVED) {
        for (const auto& chain : event.incident().chains()) {
          wire::writeChain(out, wire::fromProto(chain), 4);
        }
      }
      Session::print(out.str());
    }
    std::cout.flush();
  }
  const auto status = reader->Finish();
  if (interrupt.interrupted()) return kExitOk;
  return session.succeeded(status) ? kExitOk : session.exitCode();
}

}  // namespace wctmon::client
