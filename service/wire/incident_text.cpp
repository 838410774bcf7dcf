#include "wire/incident_text.h"

#include <ctime>
#include <iomanip>
#include <sstream>
#include <vector>

#include "model/calendar.h"
#include "model/format.h"
#include "wire/text_report.h"

namespace wctmon::wire {
namespace {

std::string threadLabels(const std::vector<ThreadRef>& threads) {
  std::string out;
  for (const auto& t : threads) out += (out.empty() ? "" : " ") + threadLabel(t);
  return out;
}

void writeRegisters(std::ostream& out, const std::vector<RegisterValue>& registers) {
  constexpr std::size_t kPerLine = 4;
  for (std::size_t k = 0; k < registers.size(); ++k) {
    out << (k % kPerLine == 0 ? "        " : "  ") << std::left << std::setw(8) << registers[k].name
        << std::right << std::setw(18) << hexString(registers[k].value);
    if (k % kPerLine == kPerLine - 1 || k + 1 == registers.size()) out << "\n";
  }
}

}  // namespace

std::string localTimeText(std::chrono::system_clock::time_point t, bool milliseconds) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  const std::tm tm = localCalendar(seconds);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  std::string out = buf;
  if (milliseconds) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()) %
                    std::chrono::seconds(1);
    std::ostringstream fraction;
    fraction << "." << std::setw(3) << std::setfill('0') << ms.count();
    out += fraction.str();
  }
  return out;
}

void writeIncident(std::ostream& out, const Incident& i) {
  out << "incident #" << i.id << ": " << toString(i.kind) << ", " << toString(i.state) << "\n";
  out << "  processes: ";
  if (i.processes.empty()) {
    out << i.process.pid.value << " " << i.process_name << " (start time " << i.process.start_time
        << ")";
  }
  for (std::size_t k = 0; k < i.processes.size(); ++k) {
    const auto& p = i.processes[k];
    out << (k > 0 ? ", " : "") << p.identity.pid.value << " " << withTitle(p.name, p.title)
        << " (start time " << p.identity.start_time << ")";
  }
  out << "\n";
  out << "  target: " << i.target << "\n";
  out << "  threads: " << threadLabels(i.threads) << "\n";
  if (!i.spurs.empty()) out << "  blocked behind them: " << threadLabels(i.spurs) << "\n";
  out << "  opened: " << localTimeText(i.opened_at, true) << "\n";
  out << "  updated: " << localTimeText(i.updated_at, true) << "\n";
  if (i.resolved_at) {
    out << "  resolved: " << localTimeText(*i.resolved_at, true) << " (" << i.resolution << ")\n";
  } else {
    out << "  resolved: not yet\n";
  }
  out << "  summary: " << i.summary << "\n";
  out << "  signature: " << i.signature << "\n";
  out << "  chains: " << i.chains.size() << "\n";
  for (const auto& chain : i.chains) writeChain(out, chain, 4);
  std::size_t captured = 0;
  for (const auto& c : i.evidence) captured += c.captured ? 1 : 0;
  out << "  evidence: " << captured << " of " << countOf(i.evidence.size(), "thread")
      << " captured\n";
  for (const auto& c : i.evidence) {
    writeCapture(out, c, 4, c.frames.size());
    if (c.tracer_pid != 0) out << "      traced by pid " << c.tracer_pid << "\n";
    if (!c.registers.empty()) {
      out << "      registers:\n";
      writeRegisters(out, c.registers);
    }
  }
  if (i.dump) writeDump(out, *i.dump);
}

void writeDump(std::ostream& out, const DumpRecord& d) {
  if (d.path.empty()) {
    out << "  dump: none (" << d.error << ")\n";
    return;
  }
  out << "  dump: " << d.path << "\n";
  out << "    " << d.format << ", " << d.bytes << " bytes, SHA-256 " << d.sha256 << "\n";
  out << "    taken: " << d.method << "\n";
  if (!d.error.empty()) out << "    " << d.error << "\n";
}

}  // namespace wctmon::wire
