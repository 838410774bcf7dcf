#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "app/run_service.h"
#include "app/service_signals.h"

namespace wctmon::app {

int runService(std::vector<std::string> args) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto service = (ec ? std::filesystem::path("/usr/bin") : self.parent_path()) / "wctmond";
  const std::string path = service.string();
  args.insert(args.begin(), path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  holdServiceSignals();  // until the service's loop handles them
  ::execv(path.c_str(), argv.data());
  releaseServiceSignals();
  std::cerr << "wctmon: cannot start " << path << ": " << std::strerror(errno) << "\n";
  return 1;
}

const char* privilegeHint() { return "run as its owner, as root or with CAP_SYS_PTRACE"; }

}  // namespace wctmon::app
