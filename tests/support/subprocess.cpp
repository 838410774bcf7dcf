#include "support/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace wctmon::testing {

const char* fixturePath() { return WCTMON_FIXTURE_PATH; }
const char* wctmonPath() { return WCTMON_BINARY_PATH; }

namespace {

std::vector<char*> cArgs(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

FixtureProcess::FixtureProcess(const std::string& scenario, const std::string& arg,
                               const std::string& tag, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{fixturePath(), scenario};
  if (!arg.empty() || !tag.empty()) argv.push_back(arg);
  if (!tag.empty()) argv.push_back(tag);
  start(argv, timeout);
}

FixtureProcess::FixtureProcess(const std::vector<std::string>& argv,
                               std::chrono::milliseconds timeout) {
  start(argv, timeout);
}

void FixtureProcess::start(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout) {
  int out_pipe[2];
  int in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  auto args = cArgs(argv);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::setpgid(pid_, pid_);
  ::close(out_pipe[1]);
  ::close(in_pipe[0]);
  stdout_fd_ = out_pipe[0];
  stdin_fd_ = in_pipe[1];
  const auto line = readLine(timeout);
  if (line.empty()) {
    kill();
    throw std::runtime_error("'" + argv.at(0) + " " + (argv.size() > 1 ? argv[1] : "") +
                             "' did not report in time");
  }
  report_ = nlohmann::json::parse(line);
}

FixtureProcess::~FixtureProcess() {
  kill();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
}

void FixtureProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  // A JVM killed leaves its attach socket behind, where a later process with its pid would
  // find it: removed, as the JVM would have on its way out.
  const auto jvm_socket = "/tmp/.java_pid" + std::to_string(pid_);
  struct stat st {};
  if (::lstat(jvm_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(jvm_socket.c_str());
  pid_ = -1;
}

bool FixtureProcess::reapIfExited() {
  if (pid_ <= 0) return true;
  int status;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    ::kill(-pid_, SIGKILL);
    pid_ = -1;
    return true;
  }
  return false;
}

std::string FixtureProcess::readLine(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {};
    pollfd p{stdout_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(stdout_fd_, buf, sizeof(buf));
    if (n <= 0) return {};
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

bool FixtureProcess::tell(const std::string& line) {
  const std::string data = line + "\n";
  return ::write(stdin_fd_, data.data(), data.size()) == static_cast<ssize_t>(data.size());
}

std::string FixtureProcess::ask(const std::string& line) {
  if (!tell(line)) return {};
  return readLine(std::chrono::seconds(10));
}

std::size_t drainPipe(int pid, int fd, std::size_t bytes, std::chrono::milliseconds timeout) {
  const auto path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int in = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (in < 0) return 0;
  std::size_t got = 0;
  std::vector<char> buf(65536);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (got < bytes && std::chrono::steady_clock::now() < deadline) {
    pollfd p{in, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n == 0) break;
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  ::close(in);
  return got;
}

std::size_t descriptorsOf(pid_t pid) {
  std::error_code ec;
  const std::filesystem::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec);
  return ec ? 0 : static_cast<std::size_t>(std::distance(fds, {}));
}

std::size_t residentBytesOf(pid_t pid, std::string_view field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  const auto prefix = std::string(field) + ":";
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoul(line.substr(prefix.size())) * 1024;
  }
  return 0;
}

std::string httpGet(const std::string& url, int timeout_seconds) {
  const auto r = runCommand({"/usr/bin/python3", "-c",
                             "import sys, urllib.request\n"
                             "sys.stdout.write(urllib.request.urlopen(sys.argv[1], "
                             "timeout=int(sys.argv[2])).read().decode())",
                             url, std::to_string(timeout_seconds)});
  return r.exit_code == 0 ? r.out : "";
}

std::map<int, char> threadStates(pid_t pid) {
  std::map<int, char> out;
  const auto task = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    std::ifstream stat(entry.path() / "stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    const auto paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size()) {
      out[std::stoi(entry.path().filename().string())] = text[paren + 2];
    }
  }
  return out;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::filesystem::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execvp(args[0], args.data());
    _exit(127);
  }
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

CommandResult runWctmon(std::vector<std::string> args) {
  args.insert(args.begin(), wctmonPath());
  return runCommand(args);
}

CommandResult runCommand(const std::vector<std::string>& argv) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  auto args = cArgs(argv);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CommandResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      (i == 0 ? result.out : result.err).append(buf, static_cast<std::size_t>(n));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandResult runInTerminal(const std::vector<std::string>& argv, unsigned short columns) {
  auto args = cArgs(argv);
  winsize size{};
  size.ws_row = 50;
  size.ws_col = columns;
  int terminal = -1;
  // The size is the terminal's from the start: the program finds it when it first asks.
  const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, &size);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    ::execvp(args[0], args.data());
    _exit(127);
  }
  CommandResult result;
  for (;;) {
    char buf[65536];
    const ssize_t n = ::read(terminal, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EIO once the program and its descendants closed the terminal
    result.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(terminal);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  for (auto at = result.out.find("\r\n"); at != std::string::npos;
       at = result.out.find("\r\n", at)) {
    result.out.erase(at, 1);
  }
  return result;
}

WorldExecutables::WorldExecutables() : wctmon_((dir_ / "wctmon").string()) {
  const auto service = std::filesystem::path(wctmonPath()).parent_path() / "wctmond";
  std::filesystem::copy_file(wctmonPath(), wctmon_);
  std::filesystem::copy_file(service, dir_ / "wctmond");
  std::filesystem::permissions(dir_.path(), std::filesystem::perms(0755));
  std::filesystem::permissions(wctmon_, std::filesystem::perms(0755));
  std::filesystem::permissions(dir_ / "wctmond", std::filesystem::perms(0755));
}

}  // namespace wctmon::testing
