// The incidents verbs: the list (paged through) and one incident whole.
#include <sstream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/human_time.h"
#include "client/incident_cells.h"
#include "client/table.h"
#include "model/format.h"
#include "wire/incident_text.h"
#include "wire/proto_convert.h"

namespace wctmon::client {
namespace {

/// The service's largest page.
constexpr std::int64_t kMaxPage = 1000;

void printIncidents(Session& session, const v1::ListIncidentsResponse& r) {
  std::vector<Table::Column> columns = {{"ID", false, true},  {"KIND"},          {"STATE"},
                                        {"PID", false, true}, {"PROCESS", true}, {"TARGET", true},
                                        {"OPENED"},           {"SUMMARY", true}};
  if (session.wide()) columns.insert(columns.end() - 1, {{"RESOLVED"}, {"THREADS"}});
  Table table(columns);
  const auto now = std::chrono::system_clock::now();
  for (const auto& i : r.incidents()) {
    const auto opened = wire::fromTimestamp(i.opened_at());
    // The age reads at a glance; wide says when, too.
    std::vector<std::string> row = {std::to_string(i.id()),
                                    kindOf(i.kind()),
                                    stateOf(i.state()),
                                    std::to_string(i.pid()),
                                    processesOf(i),
                                    i.target(),
                                    session.wide() ? timeAndAgo(opened, now) : agoText(opened, now),
                                    i.summary()};
    if (session.wide()) {
      std::vector<ThreadRef> threads;
      for (const auto& t : i.threads()) threads.push_back(wire::fromProto(t));
      row.insert(row.end() - 1,
                 {i.has_resolved_at() ? timeAndAgo(wire::fromTimestamp(i.resolved_at()), now) : "-",
                  threadList(threads)});
    }
    table.add(std::move(row));
  }
  session.printTable(table);
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
  if (session.data()) {
    session.printData(all, true);
    return kExitOk;
  }
  if (all.incidents().empty()) {
    // Not a row of data: a script counting lines counts none.
    Session::notice("no incidents\n");
    return kExitOk;
  }
  if (session.names()) {
    std::vector<std::string> names;
    for (const auto& i : all.incidents()) names.push_back("incident/" + std::to_string(i.id()));
    Session::printNames(names);
  } else {
    printIncidents(session, all);
  }
  if (!all.next_page_token().empty()) {
    Session::notice("(the " + std::to_string(all.incidents_size()) +
                    " most recent; --limit N shows more, --limit 0 all)\n");
  }
  return kExitOk;
}

int runIncident(Session& session, std::int64_t id) {
  v1::GetIncidentRequest request;
  request.set_id(id);
  v1::Incident incident;
  if (!session.call(&v1::Monitor::Stub::GetIncident, request, incident)) return session.exitCode();
  if (session.data()) {
    session.printData(incident, false);
  } else if (session.names()) {
    Session::printNames({"incident/" + std::to_string(incident.id())});
  } else {
    std::ostringstream out;
    wire::writeIncident(out, wire::fromProto(incident));
    Session::print(out.str());
  }
  return kExitOk;
}

}  // namespace wctmon::client
