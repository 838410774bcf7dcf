#include "app/incidents_command.h"

#include <ctime>
#include <iostream>

#include "app/text_report.h"
#include "rpc/json_writer.h"
#include "store/incident_store.h"

namespace wctmon::app {
namespace {

std::string localTime(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

void writeText(const std::vector<Incident>& incidents) {
  if (incidents.empty()) {
    std::cout << "no incidents\n";
    return;
  }
  for (const auto& i : incidents) {
    std::cout << "#" << i.id << " " << toString(i.kind) << " " << toString(i.state) << "  "
              << (i.processes.size() > 1 ? "pids " : "pid ");
    if (i.processes.empty()) std::cout << i.process.pid.value << " (" << i.process_name << ")";
    for (std::size_t k = 0; k < i.processes.size(); ++k) {
      std::cout << (k > 0 ? ", " : "") << i.processes[k].identity.pid.value << " ("
                << i.processes[k].name << ")";
    }
    std::cout << "  opened " << localTime(i.opened_at);
    if (i.resolved_at)
      std::cout << ", resolved " << localTime(*i.resolved_at) << " (" << i.resolution << ")";
    std::cout << "\n    " << i.summary << "\n";
    for (const auto& chain : i.chains) writeChain(std::cout, chain, 4);
    if (!i.evidence.empty()) {
      std::size_t captured = 0;
      for (const auto& c : i.evidence) captured += c.captured ? 1 : 0;
      std::cout << "    evidence: " << captured << " of " << i.evidence.size()
                << " thread(s) captured\n";
    }
  }
}

}  // namespace

void addIncidentsOptions(CLI::App& command, IncidentsArgs& args) {
  command.add_option("--config,-c", args.config, "Configuration file")->required();
  command.add_flag("--json", args.json, "Print the proto3 JSON of an IncidentList");
  command.add_option("--state", args.state, "open, resolved or all")
      ->check(CLI::IsMember({"open", "resolved", "all"}));
  command.add_option("--limit", args.limit, "Most recent N only");
}

int runIncidents(const IncidentsArgs& args) {
  const auto parsed = loadConfig(args.config);
  if (!parsed.config) {
    for (const auto& e : parsed.errors)
      std::cerr << "wctmon: " << args.config << ": " << e.toString() << "\n";
    return 1;
  }
  const auto file = parsed.config->state_dir / "incidents.db";
  std::vector<Incident> incidents;
  if (std::filesystem::exists(file)) {
    auto store = IncidentStore::openReadOnly(file);
    if (!store) {
      std::cerr << "wctmon: " << store.error().message << "\n";
      return 1;
    }
    IncidentQuery query;
    if (args.state == "open") query.state = IncidentState::kOpen;
    if (args.state == "resolved") query.state = IncidentState::kResolved;
    query.limit = args.limit;
    auto listed = (*store)->list(query);
    if (!listed) {
      std::cerr << "wctmon: " << listed.error().message << "\n";
      return 1;
    }
    incidents = std::move(listed).value();
  }
  if (args.json) {
    std::cout << rpc::incidentsToJson(incidents);
  } else {
    writeText(incidents);
  }
  return 0;
}

}  // namespace wctmon::app
