#include "platform/linux/jvm_attach.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "os/unique_fd.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/unix_stream.h"

namespace wctmon::linux_platform {
namespace {

using Clock = std::chrono::steady_clock;

/// The options in the variables the JVM reads its options from, space-separated.
std::string optionVariables(std::string_view environ) {
  static constexpr std::array kVariables = {std::string_view("JAVA_TOOL_OPTIONS="),
                                            std::string_view("JDK_JAVA_OPTIONS="),
                                            std::string_view("_JAVA_OPTIONS=")};
  std::string out;
  std::size_t at = 0;
  while (at < environ.size()) {
    const auto end = environ.find('\0', at);
    const auto entry = environ.substr(at, end == std::string_view::npos ? end : end - at);
    for (const auto variable : kVariables) {
      if (entry.starts_with(variable)) {
        out += ' ';
        out += entry.substr(variable.size());
      }
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return out;
}

/// Removes, on every way out, the attach file this request made.
class CreatedFile {
 public:
  CreatedFile() = default;
  CreatedFile(const CreatedFile&) = delete;
  CreatedFile& operator=(const CreatedFile&) = delete;
  ~CreatedFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  /// Makes `path` unless it exists; false when it cannot be made.
  bool make(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.valid()) {
      path_ = path;
      return true;
    }
    // Someone else's attach (jcmd) is under way with the same file: it serves this one too.
    return errno == EEXIST;
  }

 private:
  std::string path_;
};

bool isSocketOf(const std::string& path, std::uint32_t uid) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == uid;
}

/// A connection to the JVM's attach listener; none when no listener is there: no socket, or one
/// that nobody listens on (left by a JVM killed with the same pid: HotSpot removes it when it
/// starts its listener).
std::optional<UnixStream> connectListener(const std::string& path, std::uint32_t uid,
                                          Clock::time_point deadline) {
  if (!isSocketOf(path, uid)) return std::nullopt;
  auto stream = UnixStream::connect(path, "the JVM's attach socket", deadline);
  if (!stream) return std::nullopt;
  return std::move(stream).value();
}

/// Waits for the JVM's attach listener after the SIGQUIT, backing off like the JDK's tools.
std::optional<UnixStream> awaitListener(const std::string& path, std::uint32_t uid,
                                        Clock::time_point deadline) {
  auto pause = std::chrono::milliseconds(5);
  for (;;) {
    if (auto stream = connectListener(path, uid, deadline)) return stream;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

Result<std::string> exchange(UnixStream& stream) {
  // Protocol 1: the version, the command and three arguments, each ended by a NUL.
  static constexpr char kRequestBytes[] = "1\0threaddump\0-l\0\0\0";
  if (auto failed = stream.sendAll(std::string_view(kRequestBytes, sizeof(kRequestBytes) - 1))) {
    return *failed;
  }
  std::string answer;
  constexpr std::size_t kMaxAnswer = 64 * 1024 * 1024;
  for (;;) {
    auto more = stream.receive(answer);
    if (!more) return more.error();
    if (!*more) break;
    if (answer.size() > kMaxAnswer) return makeError(ErrorCode::kIo, "thread dump over 64 MiB");
  }
  // The answer starts with the operation's result code on a line of its own.
  const auto eol = answer.find('\n');
  if (eol == std::string::npos || answer.compare(0, eol, "0") != 0) {
    return makeError(ErrorCode::kIo,
                     "the JVM refused the thread dump: " +
                         answer.substr(0, std::min<std::size_t>(answer.size(), 200)));
  }
  return answer.substr(eol + 1);
}

/// SIGQUIT to the process started at `start_time`, through a pidfd taken before its start time is
/// checked: the pid cannot pass to another process in between.
std::optional<Error> signalQuit(Pid pid, std::uint64_t start_time) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid.value, 0)));
  if (!pidfd.valid()) return makeError(ErrorCode::kNoSuchProcess, "the JVM has exited");
  const auto stat = readProcessStat(pid);
  if (!stat || stat->start_time != start_time) {
    return makeError(ErrorCode::kNoSuchProcess, "the JVM has exited; its pid is another's now");
  }
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGQUIT, nullptr, 0) != 0) {
    return makeError(ErrorCode::kAccessDenied,
                     "cannot signal the JVM: " + std::string(std::strerror(errno)));
  }
  return std::nullopt;
}

Result<JvmThreadDumpText> attachAs(Pid pid, std::uint64_t start_time, const JvmAttachFacts& facts,
                                   std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto nspid = std::to_string(facts.namespace_pid);
  // HotSpot keeps its socket in /tmp of its own mount namespace, whatever java.io.tmpdir says.
  const auto socket_path = procPath(pid, "root/tmp/.java_pid" + nspid);
  JvmThreadDumpText out;
  CreatedFile trigger;
  auto stream = connectListener(socket_path, facts.uid, deadline);
  if (!stream) {
    if (!facts.catches_sigquit) {
      return makeError(
          ErrorCode::kUnsupported,
          "the JVM does not handle SIGQUIT (-Xrs) and its attach listener is not "
          "running: a SIGQUIT would end it, so its threads' Java locks cannot be read");
    }
    // The JVM looks for the file in its working directory, then in its /tmp.
    if (!trigger.make(procPath(pid, "cwd/.attach_pid" + nspid)) &&
        !trigger.make(procPath(pid, "root/tmp/.attach_pid" + nspid))) {
      return makeError(ErrorCode::kAccessDenied,
                       "cannot make the JVM's .attach_pid file in its working directory or /tmp");
    }
    if (auto failed = signalQuit(pid, start_time)) return *failed;
    out.started_listener = true;
    stream = awaitListener(socket_path, facts.uid, deadline);
    if (!stream) {
      return makeError(ErrorCode::kIo, "the JVM did not start its attach listener in " +
                                           std::to_string(timeout.count()) + " ms");
    }
  }
  const auto asked = Clock::now();
  auto text = exchange(*stream);
  if (!text) return text.error();
  out.text = std::move(text).value();
  out.took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - asked);
  return out;
}

}  // namespace

std::string attachRefusal(std::string_view options) {
  bool disabled = false;
  std::size_t at = 0;
  while (at < options.size()) {
    const auto start = options.find_first_not_of(std::string_view(" \t\n\0", 4), at);
    if (start == std::string_view::npos) break;
    auto end = options.find_first_of(std::string_view(" \t\n\0", 4), start);
    if (end == std::string_view::npos) end = options.size();
    const auto option = options.substr(start, end - start);
    // The last of repeated flags wins, as with the JVM.
    if (option == "-XX:+DisableAttachMechanism") disabled = true;
    if (option == "-XX:-DisableAttachMechanism") disabled = false;
    at = end;
  }
  if (disabled) {
    return "the JVM was started with -XX:+DisableAttachMechanism: its threads' Java locks cannot "
           "be read";
  }
  return {};
}

Result<JvmAttachFacts> readJvmAttachFacts(Pid pid) {
  const auto status = readWholeFile(procPath(pid, "status"), 16384);
  if (!status)
    return makeError(ErrorCode::kNoSuchProcess, "no process " + std::to_string(pid.value));
  JvmAttachFacts facts;
  const auto nspid = numberAt(statusValue(*status, "NSpid"), -1);
  const auto uid = numberAt(statusValue(*status, "Uid"), 1);
  const auto gid = numberAt(statusValue(*status, "Gid"), 1);
  const auto caught = statusValue(*status, "SigCgt");
  if (!nspid || !uid || !gid || caught.empty()) {
    return makeError(ErrorCode::kIo,
                     "cannot read the status of process " + std::to_string(pid.value));
  }
  facts.namespace_pid = static_cast<std::int32_t>(*nspid);
  facts.uid = static_cast<std::uint32_t>(*uid);
  facts.gid = static_cast<std::uint32_t>(*gid);
  // SigCgt is a hex mask; signal n is bit n - 1.
  std::uint64_t mask = 0;
  for (const char c : caught) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) break;
    mask = (mask << 4) | static_cast<std::uint64_t>(digit);
  }
  facts.catches_sigquit = (mask & (1ULL << (SIGQUIT - 1))) != 0;
  auto options = readWholeFile(procPath(pid, "cmdline"), 1 << 20).value_or("");
  options += optionVariables(readWholeFile(procPath(pid, "environ"), 1 << 20).value_or(""));
  facts.refusal = attachRefusal(options);
  return facts;
}

Result<JvmThreadDumpText> requestJvmThreadDump(Pid pid, std::uint64_t start_time,
                                               const JvmAttachFacts& facts,
                                               std::chrono::milliseconds timeout) {
  if (!facts.refusal.empty()) return makeError(ErrorCode::kUnsupported, facts.refusal);
  return runAs<JvmThreadDumpText>(Credentials{facts.uid, facts.gid}, "the JVM's",
                                  [&] { return attachAs(pid, start_time, facts, timeout); });
}

}  // namespace wctmon::linux_platform
