#include "platform/linux/jvm_attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/unique_fd.h"

namespace wctmon::linux_platform {
namespace {

using Clock = std::chrono::steady_clock;

std::string procPath(Pid pid, std::string_view rest) {
  return "/proc/" + std::to_string(pid.value) + "/" + std::string(rest);
}

std::optional<std::string> readWholeFile(const std::string& path, std::size_t limit) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  return readAll(fd.get(), limit);
}

/// The value of `key:` in a status file: the text after the tab, to the end of its line.
std::string_view statusField(std::string_view status, std::string_view key) {
  std::size_t at = 0;
  while (at < status.size()) {
    const auto eol = status.find('\n', at);
    const auto line = status.substr(at, eol == std::string_view::npos ? eol : eol - at);
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
      auto value = line.substr(key.size() + 1);
      while (!value.empty() && (value.front() == '\t' || value.front() == ' ')) {
        value.remove_prefix(1);
      }
      return value;
    }
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return {};
}

/// The n-th whitespace-separated number of `fields`; the last one for n < 0.
std::optional<std::int64_t> numberAt(std::string_view fields, int n) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < fields.size()) {
    const auto start = fields.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const auto end = fields.find_first_of(" \t", start);
    words.push_back(fields.substr(start, end == std::string_view::npos ? end : end - start));
    at = end == std::string_view::npos ? fields.size() : end;
  }
  if (words.empty()) return std::nullopt;
  const auto index = n < 0 ? words.size() - 1 : static_cast<std::size_t>(n);
  if (index >= words.size()) return std::nullopt;
  return parseInt(words[index]);
}

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

/// Drops this thread's credentials to the target's; only this thread's (the raw system calls,
/// not glibc's, which would change every thread of the process).
std::optional<Error> becomeTarget(const JvmAttachFacts& facts) {
  if (::geteuid() == facts.uid && ::getegid() == facts.gid) return std::nullopt;
  if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
      ::syscall(SYS_setresgid, facts.gid, facts.gid, facts.gid) != 0 ||
      ::syscall(SYS_setresuid, facts.uid, facts.uid, facts.uid) != 0) {
    return makeError(ErrorCode::kAccessDenied, std::string("cannot take the JVM's user ") +
                                                   std::to_string(facts.uid) +
                                                   " to attach: " + std::strerror(errno));
  }
  return std::nullopt;
}

/// Waits for the JVM's attach socket after the SIGQUIT, backing off like the JDK's tools.
bool awaitSocket(const std::string& path, std::uint32_t uid, Clock::time_point deadline) {
  auto pause = std::chrono::milliseconds(5);
  while (!isSocketOf(path, uid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  return true;
}

Result<std::string> exchange(const std::string& socket_path, Clock::time_point deadline) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return makeError(ErrorCode::kIo, "cannot make a socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) {
    return makeError(ErrorCode::kInvalidArgument, "attach socket path too long");
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  // A Unix socket connects at once or not at all.
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return makeError(ErrorCode::kIo, "cannot connect to the JVM's attach socket: " +
                                         std::string(std::strerror(errno)));
  }
  // Protocol 1: the version, the command and three arguments, each ended by a NUL.
  static constexpr char kRequestBytes[] = "1\0threaddump\0-l\0\0\0";
  static constexpr std::string_view kRequest(kRequestBytes, sizeof(kRequestBytes) - 1);
  const auto remaining = [&] {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::max<std::int64_t>(0, left.count()));
  };
  std::size_t sent = 0;
  while (sent < kRequest.size()) {
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, remaining()) <= 0) {
      return makeError(ErrorCode::kIo, "the JVM did not take the request in time");
    }
    const ssize_t n =
        ::send(fd.get(), kRequest.data() + sent, kRequest.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return makeError(ErrorCode::kIo, "the JVM closed its attach socket");
    sent += static_cast<std::size_t>(n);
  }
  std::string answer;
  constexpr std::size_t kMaxAnswer = 64 * 1024 * 1024;
  std::array<char, 65536> buf{};
  for (;;) {
    pollfd p{fd.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining());
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0)
      return makeError(ErrorCode::kIo, "the JVM did not finish its thread dump in time");
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return makeError(ErrorCode::kIo, "reading the thread dump failed");
    if (n == 0) break;
    answer.append(buf.data(), static_cast<std::size_t>(n));
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
  if (auto refused = becomeTarget(facts)) return *refused;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto nspid = std::to_string(facts.namespace_pid);
  // HotSpot keeps its socket in /tmp of its own mount namespace, whatever java.io.tmpdir says.
  const auto socket_path = procPath(pid, "root/tmp/.java_pid" + nspid);
  JvmThreadDumpText out;
  CreatedFile trigger;
  if (!isSocketOf(socket_path, facts.uid)) {
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
    if (!awaitSocket(socket_path, facts.uid, deadline)) {
      return makeError(ErrorCode::kIo, "the JVM did not start its attach listener in " +
                                           std::to_string(timeout.count()) + " ms");
    }
  }
  const auto asked = Clock::now();
  auto text = exchange(socket_path, deadline);
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
  const auto nspid = numberAt(statusField(*status, "NSpid"), -1);
  const auto uid = numberAt(statusField(*status, "Uid"), 1);
  const auto gid = numberAt(statusField(*status, "Gid"), 1);
  const auto caught = statusField(*status, "SigCgt");
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
  // A thread of its own: its credentials are dropped to the target's and die with it.
  std::optional<Result<JvmThreadDumpText>> result;
  std::thread worker([&] { result.emplace(attachAs(pid, start_time, facts, timeout)); });
  worker.join();
  return std::move(*result);
}

}  // namespace wctmon::linux_platform
