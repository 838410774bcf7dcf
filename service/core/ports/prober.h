#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/probe_config.h"

namespace wctmon {

/// What one probe found.
struct ProbeOutcome {
  bool passed = false;
  /// From the start of the probe to its answer (or to its deadline).
  std::chrono::microseconds latency{0};
  /// One line: "200 OK", "connection refused", "timed out after 2000 ms", "exit status 1".
  std::string detail;
};

/// Asks a target from outside whether it answers: a TCP or Unix socket connect, an HTTP GET, a
/// gRPC health check, a command. Each probe keeps its own deadline (ProbeConfig::timeout); the
/// prober never lets one run longer. Thread-safe.
class Prober {
 public:
  virtual ~Prober() = default;
  /// Probes once; `done` runs exactly once, on a thread of the prober's choosing, by the
  /// probe's deadline (and a little more for a command that must be killed).
  virtual void asyncProbe(const ProbeConfig& probe, std::function<void(ProbeOutcome)> done) = 0;
};

/// The probes that are the platform's: a Unix socket connect and a command. Blocking: the
/// caller runs them where a worker may wait for their deadline.
class LocalProber {
 public:
  virtual ~LocalProber() = default;
  /// Connects to the Unix socket at `path` without blocking on a full backlog (which fails it:
  /// nobody accepts).
  [[nodiscard]] virtual ProbeOutcome connectUnix(const std::string& path,
                                                 std::chrono::milliseconds timeout) = 0;
  /// Runs `probe.command` (through the shell when `probe.shell`), its output discarded; passes
  /// on exit status 0. Past the timeout the command, and what it started, is killed.
  [[nodiscard]] virtual ProbeOutcome runCommand(const ProbeConfig& probe) = 0;
};

}  // namespace wctmon
