#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "support/temp_dir.h"

namespace wctmon::testing {

/// Path of the fixture program and of the wctmon binary under test (set by CMake).
const char* fixturePath();
const char* wctmonPath();

/// A fixture process in its own process group, killed with its children when destroyed.
class FixtureProcess {
 public:
  /// Starts `wctmon-fixture scenario arg` and waits for its report line (up to `timeout`).
  /// `tag`, when given, is one more argument the fixture ignores: a service test selects its own
  /// fixtures by it (a `cmdline` target), never those of tests running beside it.
  FixtureProcess(const std::string& scenario, const std::string& arg = "",
                 const std::string& tag = "",
                 std::chrono::milliseconds timeout = std::chrono::seconds(20));
  /// Starts any program (`argv[0]` looked up in PATH) that prints a report line the same way:
  /// a program written outside this repository, driven by a small script.
  FixtureProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);
  FixtureProcess(const FixtureProcess&) = delete;
  FixtureProcess& operator=(const FixtureProcess&) = delete;
  ~FixtureProcess();

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const nlohmann::json& report() const { return report_; }
  [[nodiscard]] int tid(const std::string& name) const {
    return report_.at("threads").at(name).get<int>();
  }
  [[nodiscard]] int child(const std::string& name) const {
    return report_.at("processes").at(name).get<int>();
  }
  /// Writes a line to the fixture's stdin and reads one line back.
  [[nodiscard]] std::string ask(const std::string& line);
  /// Writes a line to the fixture's stdin; true when it was written whole.
  bool tell(const std::string& line);
  /// The next line the fixture prints, or "" after `timeout`.
  [[nodiscard]] std::string nextLine(std::chrono::milliseconds timeout) {
    return readLine(timeout);
  }
  void kill();
  /// Reaps the process if it has exited; true once it is gone.
  bool reapIfExited();

 private:
  [[nodiscard]] std::string readLine(std::chrono::milliseconds timeout);
  void start(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stdin_fd_ = -1;
  std::string buffer_;
  nlohmann::json report_;
};

/// Reads from the pipe that process `pid` holds as `fd`, through /proc, until `bytes` came, EOF,
/// or `timeout`: lets a writer blocked on that pipe go on. Returns the bytes read.
std::size_t drainPipe(int pid, int fd, std::size_t bytes,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// How many descriptors process `pid` has open (0 when it is gone).
std::size_t descriptorsOf(pid_t pid);

/// The resident memory of process `pid` in bytes (0 when it is gone): all of it (VmRSS), or one
/// part of it, such as what it allocated (RssAnon) without the files it maps (RssFile).
std::size_t residentBytesOf(pid_t pid, std::string_view field = "VmRSS");

/// The body of an HTTP GET of `url`, or "" when it fails.
std::string httpGet(const std::string& url, int timeout_seconds = 5);

/// The state letter of each thread of `pid` (/proc/PID/task/TID/stat), by tid.
std::map<int, char> threadStates(pid_t pid);

/// A program run in the background (`argv[0]` looked up in PATH), its stdout and stderr in
/// `log`; killed (SIGKILL) and reaped when destroyed: a server a test talks to.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

/// A loopback TCP port nobody listens on now, for a server a test starts after the service that
/// is to reach it.
int freePort();

/// The whole of a file ("" when it cannot be read): service logs, for failure messages.
std::string readFile(const std::filesystem::path& path);

/// Polls `done` every `poll` until it holds or `timeout` passes; whether it held.
bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll = std::chrono::milliseconds(50));

/// Result of running a command to completion.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `argv` (optionally under `setpriv` as an unprivileged user) and collects its output.
CommandResult runCommand(const std::vector<std::string>& argv);

/// Runs `argv` with a terminal of `columns` columns as its standard input, output and error (a
/// pseudo-terminal): what it writes to either, "\r\n" read as "\n", in `out`.
CommandResult runInTerminal(const std::vector<std::string>& argv, unsigned short columns);

/// Runs the wctmon under test with `args`.
CommandResult runWctmon(std::vector<std::string> args);

/// Copies of wctmon and of wctmond, which it runs, in a temporary directory that any user can
/// run them from, whatever the permissions of the build tree; removed when destroyed.
class WorldExecutables {
 public:
  WorldExecutables();
  WorldExecutables(const WorldExecutables&) = delete;
  WorldExecutables& operator=(const WorldExecutables&) = delete;

  [[nodiscard]] const std::string& wctmon() const { return wctmon_; }

 private:
  TempDir dir_{"bin"};
  std::string wctmon_;
};

}  // namespace wctmon::testing
