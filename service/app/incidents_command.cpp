#include "app/incidents_command.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "core/config.h"
#include "model/format.h"
#include "store/incident_store.h"
#include "wire/incident_text.h"
#include "wire/json_writer.h"
#include "wire/terminal_text.h"
#include "wire/text_report.h"

namespace wctmon::app {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;

/// Frames shown per thread in the list; `--id` shows them all.
constexpr std::size_t kListedFrames = 3;

std::string processList(const Incident& i) {
  std::string out;
  if (i.processes.empty()) {
    return std::to_string(i.process.pid.value) + " (" + i.process_name + ")";
  }
  for (const auto& p : i.processes) {
    out += (out.empty() ? "" : ", ") + std::to_string(p.identity.pid.value) + " (" + p.name + ")";
  }
  return out;
}

/// The instruction pointer of a capture: its register by the architecture's name, else the pc
/// of its innermost frame.
std::optional<std::uint64_t> instructionPointer(const ThreadCapture& c) {
  for (const auto& r : c.registers) {
    if (r.name == "rip" || r.name == "pc" || r.name == "eip" || r.name == "ip") return r.value;
  }
  if (!c.frames.empty()) return c.frames.front().pc;
  return std::nullopt;
}

std::string methodText(const ThreadCapture& c) {
  if (c.method == CaptureMethod::kNotStopped) return "read without stopping";
  return "stopped " + std::to_string(c.stop_time.count() / 1000) + " us";
}

/// A demangled C++ name without its template arguments and parameter list, which for lambdas
/// and std::function run to hundreds of characters: "std::_Function_handler<...>::_M_invoke".
std::string shortFunctionName(const std::string& name) {
  std::string out;
  int angle = 0;
  for (const char c : name) {
    if (c == '<' && angle++ == 0) out += "<...";
    if (c == '>' && --angle == 0) out += '>';
    if (angle == 0 && c != '>') out += c;
  }
  // The parameter list closes the name; "(anonymous namespace)" inside it does not.
  if (!out.empty() && (out.back() == ')' || out.ends_with(") const"))) {
    int depth = 0;
    for (std::size_t k = out.rfind(')') + 1; k-- > 0;) {
      if (out[k] == ')') ++depth;
      if (out[k] == '(' && --depth == 0) {
        out.resize(k);
        break;
      }
    }
  }
  return angle == 0 && !out.empty() ? out : name;
}

/// "pthread_mutex_lock+0x8a (libc.so.6)", "worker+0x1c (server) worker.cpp:42", or the address
/// and module when the function is not known.
std::string compactFrame(const StackFrame& f) {
  const std::string module = std::filesystem::path(f.module).filename().string();
  std::string out = f.function.empty() ? hexString(f.pc)
                                       : shortFunctionName(f.function) + "+" + hexString(f.offset);
  if (!module.empty()) out += " (" + module + ")";
  if (!f.file.empty()) {
    out += " " + std::filesystem::path(f.file).filename().string() + ":" + std::to_string(f.line);
  }
  if (f.scanned) out += " [scanned]";
  return out;
}

/// Each captured thread in a few lines: how it was taken, where it stands, its top frames.
void writeEvidenceSummary(std::ostream& out, const std::vector<ThreadCapture>& evidence) {
  std::size_t captured = 0;
  for (const auto& c : evidence) captured += c.captured ? 1 : 0;
  out << "    evidence: " << captured << " of " << countOf(evidence.size(), "thread")
      << " captured\n";
  for (const auto& c : evidence) {
    out << "      " << threadLabel(c.thread);
    if (!c.captured) {
      out << " not captured: " << c.error << "\n";
      continue;
    }
    out << " " << methodText(c);
    if (const auto ip = instructionPointer(c)) out << ", ip " << hexString(*ip);
    out << "\n";
    for (std::size_t k = 0; k < c.frames.size() && k < kListedFrames; ++k) {
      out << "        #" << k << " " << compactFrame(c.frames[k]) << "\n";
    }
    if (c.frames.size() > kListedFrames) {
      out << "        ... " << countOf(c.frames.size() - kListedFrames, "more frame") << "\n";
    }
  }
}

/// One incident of the list; returns whether it carries evidence.
bool writeListed(std::ostream& out, const Incident& i) {
  out << "#" << i.id << " " << toString(i.kind) << " " << toString(i.state) << "  "
      << (i.processes.size() > 1 ? "pids " : "pid ") << processList(i) << "  opened "
      << wire::localTimeText(i.opened_at);
  if (i.resolved_at)
    out << ", resolved " << wire::localTimeText(*i.resolved_at) << " (" << i.resolution << ")";
  out << "\n    " << i.summary << "\n";
  for (const auto& chain : i.chains) wire::writeChain(out, chain, 4);
  if (i.evidence.empty()) return false;
  writeEvidenceSummary(out, i.evidence);
  return true;
}

/// Incidents read from the store per page: a store of 50,000 incidents (a ring's incident alone
/// is megabytes) is listed without ever holding more than a page of them.
constexpr std::size_t kPage = 100;

/// Lists what `query` selects, a page at a time, handing each incident to `each`; says the
/// store's warnings (records that could not be read) once each.
Result<std::size_t> forEachListed(IncidentStore& store, IncidentQuery query,
                                  const std::function<void(const Incident&)>& each) {
  const std::size_t wanted = query.limit;
  std::size_t listed = 0;
  std::set<std::string> warned;
  for (;;) {
    query.limit = wanted == 0 ? kPage : std::min(kPage, wanted - listed);
    auto page = store.list(query);
    if (!page) return page.error();
    if (!page->warning.empty() && warned.insert(page->warning).second) {
      std::cerr << "wctmon: warning: " << page->warning << "\n";
    }
    for (const auto& i : page->incidents) each(i);
    listed += page->incidents.size();
    // A page short of its limit may only have skipped a record it could not read: the list ends
    // with an empty page.
    if (page->incidents.empty() || (wanted != 0 && listed >= wanted)) return listed;
    const auto& last = page->incidents.back();
    query.after = IncidentQuery::Position{last.opened_at, last.id};
  }
}

}  // namespace

int runIncidents(const IncidentsArgs& args) {
  const auto parsed = loadConfig(args.config);
  if (!parsed) {
    for (const auto& e : parsed.error()) std::cerr << "wctmon: " << e.describe(args.config) << "\n";
    return kExitError;
  }
  const auto file = parsed->state_dir / "incidents.db";
  auto store = IncidentStore::openReadOnly(file);
  if (!store) {
    std::cerr << "wctmon: " << store.error().message << "\n";
    return kExitError;
  }
  if (args.id != 0) {
    auto got = (*store)->get(args.id);
    if (!got) {
      std::cerr << "wctmon: " << got.error().message << "\n";
      return kExitError;
    }
    if (!got->has_value()) {
      std::cerr << "wctmon: no incident " << args.id << " in " << file.string()
                << " (wctmon incidents lists them)\n";
      return kExitError;
    }
    if (args.json) {
      std::cout << wire::incidentToJson(**got);
    } else {
      // Names in an incident are what the processes chose: escaped, as wctctl does.
      std::ostringstream text;
      wire::writeIncident(text, **got);
      std::cout << wire::terminalSafe(text.str());
    }
    return kExitOk;
  }
  IncidentQuery query;
  if (args.state == "open") query.state = IncidentState::kOpen;
  if (args.state == "resolved") query.state = IncidentState::kResolved;
  query.limit = args.limit;
  // The incidents that could be read are listed; the others are said, not hidden.
  Result<std::size_t> listed = std::size_t{0};
  if (args.json) {
    wire::IncidentsJsonStream stream(stdout);
    listed = forEachListed(**store, query, [&](const Incident& i) { stream.add(i); });
    if (listed) stream.finish();
  } else {
    bool any_evidence = false;
    listed = forEachListed(**store, query, [&](const Incident& i) {
      // Names in an incident are what the processes chose: escaped, as wctctl does.
      std::ostringstream text;
      any_evidence = writeListed(text, i) || any_evidence;
      std::cout << wire::terminalSafe(text.str());
    });
    if (listed && *listed == 0) std::cout << "no incidents\n";
    if (listed && any_evidence) {
      std::cout
          << "(wctmon incidents --id ID shows one incident whole: every frame and register)\n";
    }
  }
  if (!listed) {
    std::cout.flush();
    std::cerr << "wctmon: " << listed.error().message << "\n";
    return kExitError;
  }
  return kExitOk;
}

}  // namespace wctmon::app
