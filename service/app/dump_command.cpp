#include "app/dump_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "core/analyzer.h"
#include "core/dump_writing.h"
#include "core/frozen_session.h"
#include "core/run_loop.h"
#include "model/calendar.h"
#include "platform/platform_factory.h"
#include "wire/dump_file.h"
#include "wire/json_writer.h"
#include "wire/terminal_text.h"
#include "wire/text_report.h"

namespace wctmon::app {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitDeadlock = 3;

/// The recorded diagnosis as JSON to print: as it was written when it is JSON, else an error
/// object saying it is not (a core's note is what its writer put there).
nlohmann::json recordedJson(const std::string& diagnosis) {
  auto parsed = nlohmann::json::parse(diagnosis, nullptr, false);
  if (parsed.is_discarded()) {
    return nlohmann::json{{"error", "the diagnosis recorded in the dump is not JSON"}};
  }
  return parsed;
}

std::string threadList(const nlohmann::json& threads) {
  std::string out;
  for (const auto& t : threads) {
    if (!t.is_object() || !t.contains("tid") || !t["tid"].is_number_integer()) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(t["tid"].get<long long>());
  }
  return out;
}

/// What wctmon recorded inside the dump when it wrote it, in short: its deadlocks, or why it
/// had no analysis.
std::string recordedSummary(const nlohmann::json& recorded, const std::string& file) {
  std::ostringstream out;
  out << "\nRecorded when the dump was taken (wctmon's diagnosis inside the dump):\n";
  if (!recorded.is_object()) {
    out << "  (not an analysis)\n";
  } else if (recorded.contains("error")) {
    out << "  no analysis: " << recorded["error"].dump() << "\n";
  } else if (recorded.contains("kind") && recorded.contains("summary")) {
    // The service's dump of an incident carries the incident.
    out << "  incident " << recorded.value("id", "?") << " (" << recorded.value("kind", "")
        << "), open when the dump was taken: " << recorded.value("summary", "") << "\n";
  } else {
    const auto deadlocks = recorded.value("deadlocks", nlohmann::json::array());
    if (recorded.contains("sampled_at") && recorded["sampled_at"].is_string()) {
      out << "  sampled at " << recorded["sampled_at"].get<std::string>() << "\n";
    }
    out << "  " << (deadlocks.is_array() ? deadlocks.size() : 0) << " deadlock(s)\n";
    if (deadlocks.is_array()) {
      for (const auto& d : deadlocks) {
        if (!d.is_object() || !d.contains("threads")) continue;
        out << "  deadlock: threads " << threadList(d["threads"]) << "\n";
      }
    }
  }
  out << "  (all of it: wctmon dump info " << file << ")\n";
  return out.str();
}

std::filesystem::path defaultPath(int pid, std::string_view extension) {
  return "wctmon-" + std::to_string(pid) + "-" + utcStamp(std::chrono::system_clock::now()) +
         std::string(extension);
}

}  // namespace

int runDump(const DumpArgs& args) {
  // The diagnosis first: taken while the process is as it hangs, and carried inside the dump. A
  // process whose waits cannot be read (no WCT) is still dumped: the diagnosis says why.
  RunLoop loop;
  auto source = makeWaitChainSource(loop.executor());
  WaitChainAnalyzer analyzer(nullptr);
  auto session = source->open(Pid{args.pid});
  Result<Analysis> analysis =
      session ? analyzeNow(loop, analyzer, std::move(session).value(), AnalyzeOptions{})
              : Result<Analysis>(session.error());
  if (!analysis && analysis.error().code == ErrorCode::kNoSuchProcess) {
    std::cerr << "wctmon: " << analysis.error().message << "\n";
    return kExitError;
  }
  const auto diagnosis = analysis ? wire::analysisToJson(analysis->result)
                                  : wire::analysisErrorToJson(analysis.error().message);

  auto dumper = makeProcessDumper();
  const std::filesystem::path path = args.out.empty() ? defaultPath(args.pid, dumper->extension())
                                                      : std::filesystem::path(args.out);
  auto written = writeDump(*dumper, Pid{args.pid},
                           DumpRequest{path, args.max_mib << 20, args.full_memory, diagnosis});
  if (!written) {
    std::cerr << "wctmon: " << written.error().message << "\n";
    return kExitError;
  }
  std::cout << "wrote " << path.string() << ": " << written->bytes << " bytes, " << written->format
            << ", SHA-256 " << written->sha256 << "; " << written->method << "\n"
            << "its diagnosis: "
            << (analysis ? std::to_string(analysis->result.deadlocks.size()) + " deadlock(s)"
                         : "none (" + analysis.error().message + ")")
            << ", in the dump (wctmon dump info " << path.string() << ") and in "
            << sidecarOf(path).string() << "\n";
  return analysis && !analysis->result.deadlocks.empty() ? kExitDeadlock : kExitOk;
}

void printAnalysis(const AnalysisResult& result, bool json, bool brief) {
  if (json) {
    std::cout.flush();
    wire::writeAnalysisJson(result, stdout);
    std::fflush(stdout);
    return;
  }
  // Thread and process names are what the processes chose: escaped, as wctctl does.
  std::ostringstream text;
  wire::writeTextReport(text, result, brief);
  std::cout << wire::terminalSafe(text.str());
}

int runAnalyzeCore(const AnalyzeCoreArgs& args) {
  auto reader = makeDumpReader();
  auto snapshot = reader->read(DumpToRead{args.core, args.exe});
  if (!snapshot) {
    std::cerr << "wctmon: " << snapshot.error().message << "\n";
    return kExitError;
  }
  // The core is one moment: the analyzer's re-reads find it as it was.
  RunLoop loop;
  WaitChainAnalyzer analyzer(nullptr);
  const AnalyzeOptions options{.max_nodes = args.max_nodes,
                               .timed_wait_bound = args.timed_wait_bound};
  auto analysis =
      analyzeNow(loop, analyzer, makeFrozenSession(std::move(snapshot).value()), options);
  if (!analysis) {
    std::cerr << "wctmon: " << analysis.error().message << "\n";
    return kExitError;
  }
  const auto& result = analysis->result;
  const auto info = wire::readDumpFile(args.core);
  const bool recorded = info && !info->diagnosis.empty();
  if (!recorded) {
    printAnalysis(result, args.json, args.brief);
  } else if (args.json) {
    // Both, side by side: the fresh analysis shaped as `analyze --pid` prints it, and the one
    // recorded when the dump was written.
    auto fresh = wire::analysisToJson(result);
    while (!fresh.empty() && fresh.back() == '\n') fresh.pop_back();
    std::cout << "{\"analysis\":" << fresh
              << ",\"recorded\":" << recordedJson(info->diagnosis).dump() << "}\n";
  } else {
    printAnalysis(result, false, args.brief);
    std::cout << wire::terminalSafe(recordedSummary(recordedJson(info->diagnosis), args.core));
  }
  return result.deadlocks.empty() ? kExitOk : kExitDeadlock;
}

int runDumpInfo(const std::string& file) {
  const auto info = wire::readDumpFile(file);
  if (!info) {
    std::cerr << "wctmon: " << info.error().message << "\n";
    return kExitError;
  }
  if (info->diagnosis.empty()) {
    std::cerr << "wctmon: " << file << " is a " << info->format
              << " that carries no wctmon diagnosis (written by another tool)\n";
    return kExitError;
  }
  // Names in it are what the processes chose: escaped for the terminal.
  std::cout << wire::terminalSafe(info->diagnosis);
  if (!info->diagnosis.ends_with('\n')) std::cout << "\n";
  return kExitOk;
}

}  // namespace wctmon::app
