// The Linux probes that are not network probes, on real sockets and real commands: a Unix
// socket that accepts, refuses or has a full backlog; commands that pass, fail, cannot start,
// or outlive their deadline and are killed with what they started.
#include "platform/linux/local_prober.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/temp_dir.h"

namespace wctmon::linux_platform {
namespace {

using namespace std::chrono_literals;

/// A Unix socket listening at `path` that never accepts, with a backlog of `backlog`.
int listenUnix(const std::string& path, int backlog) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::listen(fd, backlog), 0);
  return fd;
}

ProbeConfig command(std::vector<std::string> argv, bool shell = false,
                    std::chrono::milliseconds timeout = 2s) {
  ProbeConfig p;
  p.type = ProbeConfig::Type::kExec;
  p.command = std::move(argv);
  p.shell = shell;
  p.timeout = timeout;
  return p;
}

TEST(LocalProber, AUnixSocketPassesWhileItsBacklogHasRoomAndFailsOnceItIsFull) {
  testing::TempDir dir("unix-probe");
  const auto path = (dir / "server.sock").string();
  LinuxLocalProber prober;
  auto o = prober.connectUnix(path, 1s);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "No such file or directory");

  const int server = listenUnix(path, 1);
  // The kernel queues backlog + 1 connections of a server that does not accept.
  int passed = 0;
  for (int i = 0; i < 10; ++i) {
    o = prober.connectUnix(path, 1s);
    if (!o.passed) break;
    ++passed;
  }
  EXPECT_GE(passed, 1);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "the listen backlog is full: the server does not accept");
  ::close(server);
  o = prober.connectUnix(path, 1s);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "connection refused: nobody listens");
}

TEST(LocalProber, ACommandPassesOnExitStatusZeroOnly) {
  LinuxLocalProber prober;
  auto o = prober.runCommand(command({"true"}));
  EXPECT_TRUE(o.passed) << o.detail;
  EXPECT_EQ(o.detail, "exit status 0");
  o = prober.runCommand(command({"sh", "-c", "exit 3"}));
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "exit status 3");
  o = prober.runCommand(command({"test -d / && test -x /bin/sh"}, true));
  EXPECT_TRUE(o.passed) << "a shell line: " << o.detail;
  o = prober.runCommand(command({"/no/such/program"}));
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "cannot run /no/such/program: No such file or directory");
}

TEST(LocalProber, ACommandPastItsDeadlineIsKilledWithWhatItStarted) {
  testing::TempDir dir("exec-probe");
  const auto pidfile = (dir / "child.pid").string();
  LinuxLocalProber prober;
  const auto start = std::chrono::steady_clock::now();
  const auto o =
      prober.runCommand(command({"sleep 60 & echo $! > " + pidfile + "; sleep 60"}, true, 300ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "timed out after 300 ms (killed)");
  EXPECT_LT(took, 2s);
  pid_t child = 0;
  std::ifstream(pidfile) >> child;
  ASSERT_GT(child, 0);
  // Its background child went with it (a zombie until init reaps it at most).
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    stat >> pid >> comm >> state;
    gone = !stat || state == "Z";
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "pid " << child << " still runs";
}

}  // namespace
}  // namespace wctmon::linux_platform
