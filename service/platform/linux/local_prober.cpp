#include "platform/linux/local_prober.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "os/unique_fd.h"

extern char** environ;  // NOLINT: POSIX declares it nowhere

namespace wctmon::linux_platform {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::chrono::microseconds since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
}

/// Owns spawn attributes and file actions, destroyed once.
struct SpawnSetup {
  posix_spawnattr_t attr{};
  posix_spawn_file_actions_t actions{};
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

std::string statusText(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "ended";
}

}  // namespace

ProbeOutcome LinuxLocalProber::connectUnix(const std::string& path,
                                           std::chrono::milliseconds /*timeout*/) {
  const auto start = SteadyClock::now();
  ProbeOutcome out;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    out.detail = "the path is too long for a Unix socket";
    return out;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    out.detail = std::string("cannot make a socket: ") + std::strerror(errno);
    return out;
  }
  // A Unix stream connect does not wait for the server's accept: it succeeds while the listen
  // backlog has room, and fails at once (EAGAIN, non-blocking) when the server stopped
  // accepting long enough for the backlog to fill: the hang the probe is for.
  const int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  out.latency = since(start);
  if (rc == 0) {
    out.passed = true;
    out.detail = "connected";
  } else if (errno == EAGAIN) {
    out.detail = "the listen backlog is full: the server does not accept";
  } else if (errno == ECONNREFUSED) {
    out.detail = "connection refused: nobody listens";
  } else {
    out.detail = std::strerror(errno);
  }
  return out;
}

ProbeOutcome LinuxLocalProber::runCommand(const ProbeConfig& probe) {
  const auto start = SteadyClock::now();
  ProbeOutcome out;
  std::vector<std::string> args =
      probe.shell ? std::vector<std::string>{"/bin/sh", "-c", probe.command.front()}
                  : probe.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  SpawnSetup setup;
  // A group of its own: past the deadline the command and whatever it started go together.
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    posix_spawn_file_actions_addopen(&setup.actions, fd, "/dev/null",
                                     fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0);
  }
  pid_t pid = -1;
  const int rc =
      probe.shell
          ? ::posix_spawn(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), environ)
          : ::posix_spawnp(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), environ);
  if (rc != 0) {
    out.detail = "cannot run " + args.front() + ": " + std::strerror(rc);
    return out;
  }
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const auto deadline = start + probe.timeout;
  bool ended = false;
  while (pidfd.valid() && !ended) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    pollfd p{pidfd.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) ended = true;
    if (n < 0 && errno != EINTR) break;
  }
  if (!pidfd.valid()) {
    // No pidfd (an old kernel): look every 10 ms until the deadline, without reaping it.
    siginfo_t info{};
    while (!ended && SteadyClock::now() < deadline) {
      info.si_pid = 0;
      ended = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
              info.si_pid == pid;
      if (!ended) ::usleep(10000);
    }
  }
  // The group goes before its leader is reaped (until then its id cannot be another's): past
  // the deadline the command and what it started, after it ended what it left running. A probe
  // leaves nothing behind.
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!ended) {
    out.latency = since(start);
    out.detail = "timed out after " + std::to_string(probe.timeout.count()) + " ms (killed)";
    return out;
  }
  out.latency = since(start);
  out.passed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  out.detail = statusText(status);
  return out;
}

}  // namespace wctmon::linux_platform
