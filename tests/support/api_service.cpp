#include "support/api_service.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>

#include "support/subprocess.h"

namespace wctmon::testing {

ApiService::ApiService(const std::string& api_extra, const std::string& extra,
                       const std::string& target_extra) {
  tag_ = "--tag=" + dir_.name();
  std::ofstream(dir_ / "wctmon.json")
      << R"({"state_dir": ")" << (dir_ / "state").string()
      << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {)" << api_extra
      << R"("listen": ["unix:)" << socket()
      << R"(", "127.0.0.1:0"]}, "sampling": {"interval_ms": 300},)"
      << (extra.find(R"("alerts")") == std::string::npos ? R"( "alerts": {"sink": "none"}, )" : " ")
      << extra << R"("targets": [{)" << target_extra << R"("name": "fixtures", "cmdline": ")"
      << tag_ << R"(", "hang_threshold_ms": 1000}]})";
  start();
}

void ApiService::start() {
  using namespace std::chrono_literals;
  // What this start logs: the log of an earlier run says "service started" already.
  const auto logged_before = readFile(log()).size();
  pid_ = ::fork();
  if (pid_ == 0) {
    const int fd = ::open(log().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, STDERR_FILENO);
    ::dup2(fd, STDOUT_FILENO);
    const std::string c = (dir_ / "wctmon.json").string();
    ::execl(wctmonPath(), wctmonPath(), "run", "--config", c.c_str(), nullptr);
    _exit(127);
  }
  waitFor(
      [&] { return readFile(log()).find("service started", logged_before) != std::string::npos; },
      20s);
  std::smatch m;
  const auto text = readFile(log()).substr(logged_before);
  if (std::regex_search(text, m, std::regex(R"(API listening on .*127\.0\.0\.1:(\d+))"))) {
    tcp_ = "127.0.0.1:" + m[1].str();
  }
  if (std::regex_search(text, m, std::regex(R"(metrics served at http://([0-9.]+:\d+)/)"))) {
    metrics_ = m[1].str();
  }
}

ApiService::~ApiService() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::pair<std::chrono::milliseconds, int> ApiService::terminate() {
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return {std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                start),
          status};
}

}  // namespace wctmon::testing
