// The attach request's signal on real processes: it reaches only the process the sample read,
// and what it makes to start a listener is removed whatever the answer.
#include "platform/linux/jvm_attach.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "os/unique_fd.h"
#include "platform/linux/task_reader.h"
#include "support/subprocess.h"

namespace wctmon::linux_platform {
namespace {

using namespace std::chrono_literals;

/// A process that catches SIGQUIT as a JVM does, says so on its output, and starts no listener.
std::unique_ptr<testing::FixtureProcess> quitCatcher() {
  return std::make_unique<testing::FixtureProcess>(std::vector<std::string>{"python3", "-c", R"(
import json, os, signal, time
signal.signal(signal.SIGQUIT, lambda *a: print("QUIT", flush=True))
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
while True: time.sleep(1)
)"},
                                                   20s);
}

TEST(JvmAttach, APidWhoseStartTimeIsNotTheSamplesIsNeverSignalled) {
  auto p = quitCatcher();
  const Pid pid{p->pid()};
  auto facts = readJvmAttachFacts(pid);
  ASSERT_TRUE(facts.ok()) << facts.error().message;
  EXPECT_TRUE(facts->catches_sigquit);
  EXPECT_TRUE(facts->refusal.empty());
  const auto stat = readProcessStat(pid);
  ASSERT_TRUE(stat);

  // As if the JVM sampled had exited and its pid gone to this process.
  auto answer = requestJvmThreadDump(pid, stat->start_time + 1, *facts, 500ms);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, ErrorCode::kNoSuchProcess) << answer.error().message;
  EXPECT_EQ(p->nextLine(500ms), "");

  // The process the sample read is signalled; it starts no listener, and the trigger file made
  // in its working directory is gone again.
  answer = requestJvmThreadDump(pid, stat->start_time, *facts, 500ms);
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.error().message.find("did not start its attach listener"), std::string::npos)
      << answer.error().message;
  EXPECT_EQ(p->nextLine(2s), "QUIT");
  const auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(p->pid()) + "/cwd");
  EXPECT_FALSE(std::filesystem::exists(cwd / (".attach_pid" + std::to_string(p->pid()))));
}

TEST(JvmAttach, AProcessThatDoesNotCatchSigquitIsNeverSignalled) {
  testing::FixtureProcess p(std::vector<std::string>{"python3", "-c", R"(
import json, os, signal, time
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
time.sleep(100)
)"},
                            20s);
  const Pid pid{p.pid()};
  auto facts = readJvmAttachFacts(pid);
  ASSERT_TRUE(facts.ok());
  EXPECT_FALSE(facts->catches_sigquit);
  const auto answer = requestJvmThreadDump(pid, readProcessStat(pid)->start_time, *facts, 500ms);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(::kill(p.pid(), 0), 0);  // a SIGQUIT would have ended it
}

TEST(JvmAttach, ASocketLeftByAKilledJvmWithTheSamePidIsNoListener) {
  // A JVM killed with SIGKILL leaves /tmp/.java_pid<pid>; a later process with that pid has
  // no listener there. Taken for one, the request failed to connect instead of starting the
  // new JVM's listener, or of saying that it cannot be started.
  auto p = quitCatcher();
  const Pid pid{p->pid()};
  const auto stale = "/tmp/.java_pid" + std::to_string(p->pid());
  {
    const UniqueFd bound(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", stale.c_str());
    ASSERT_EQ(::bind(bound.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  }  // closed: nobody listens on it any more
  auto facts = readJvmAttachFacts(pid);
  ASSERT_TRUE(facts.ok()) << facts.error().message;
  const auto start_time = readProcessStat(pid)->start_time;

  auto answer = requestJvmThreadDump(pid, start_time, *facts, 500ms);
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.error().message.find("did not start its attach listener"), std::string::npos)
      << answer.error().message;
  EXPECT_EQ(p->nextLine(2s), "QUIT");  // asked to start its listener

  facts->catches_sigquit = false;  // as a JVM run with -Xrs
  answer = requestJvmThreadDump(pid, start_time, *facts, 500ms);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, ErrorCode::kUnsupported) << answer.error().message;
  EXPECT_EQ(p->nextLine(500ms), "");
  std::filesystem::remove(stale);
}

}  // namespace
}  // namespace wctmon::linux_platform
