#include "app/dump_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "core/analyzer.h"
#include "core/dump_writing.h"
#include "core/run_loop.h"
#include "model/calendar.h"
#include "platform/platform_factory.h"
#include "wire/dump_file.h"
#include "wire/json_writer.h"
#include "wire/terminal_text.h"

namespace wctmon::app {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitDeadlock = 3;

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
