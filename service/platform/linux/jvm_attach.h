#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "model/ids.h"
#include "model/result.h"

namespace wctmon::linux_platform {

/// What a HotSpot JVM's own settings say about being asked through its attach mechanism.
struct JvmAttachFacts {
  /// Its pid as its own PID namespace numbers it: the attach files are named by it.
  std::int32_t namespace_pid = 0;
  /// The effective user and group it runs as: the attach socket only answers them (and root).
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  /// Why it must not be asked, when it must not: started with -XX:+DisableAttachMechanism (a
  /// SIGQUIT would print a dump into its output instead).
  std::string refusal;
  /// Whether it handles SIGQUIT: with -Xrs it does not, and a SIGQUIT would end it (such a JVM
  /// starts its attach listener at once instead, so it is asked only when that is there).
  bool catches_sigquit = false;
};

/// Reads the facts from /proc/PID/status, cmdline and environ (where the JVM's options are:
/// its command line and JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, _JAVA_OPTIONS).
[[nodiscard]] Result<JvmAttachFacts> readJvmAttachFacts(Pid pid);

/// Why a JVM with these options must not be asked; empty when it may be. `options` are its
/// command line and option variables, NUL- or space-separated.
[[nodiscard]] std::string attachRefusal(std::string_view options);

/// A thread dump and what it cost.
struct JvmThreadDumpText {
  std::string text;
  /// From the request to the end of the answer: the JVM is paused at a safepoint for part of it.
  std::chrono::microseconds took{0};
  /// Whether the JVM had to be woken to start its attach listener (SIGQUIT).
  bool started_listener = false;
};

/// Asks HotSpot JVM `pid` for its thread dump with locked synchronizers (`jstack -l`), as the
/// JDK's tools do: through the `.java_pid<nspid>` socket in the target's own /tmp (via
/// /proc/PID/root), first starting the JVM's attach listener with an `.attach_pid<nspid>` file
/// and SIGQUIT when the socket is not there. It connects with the target's user and group, in a
/// thread of its own whose credentials are dropped for it, and removes the file it made. The
/// signal goes through a pidfd of the process started at `start_time` (its stat's start time), so
/// that a pid reused since the sample is never signalled. Fails after `timeout` when the JVM does
/// not answer.
[[nodiscard]] Result<JvmThreadDumpText> requestJvmThreadDump(Pid pid, std::uint64_t start_time,
                                                             const JvmAttachFacts& facts,
                                                             std::chrono::milliseconds timeout);

}  // namespace wctmon::linux_platform
