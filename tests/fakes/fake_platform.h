#pragma once

#include <map>
#include <vector>

#include "core/ports/alert_sink.h"
#include "core/ports/process_catalog.h"

namespace wctmon::testing {

/// A process list the test sets.
class FakeProcessCatalog final : public ProcessCatalog {
 public:
  void set(std::vector<ProcessInfo> processes) { processes_ = std::move(processes); }
  std::vector<ProcessInfo> list(bool) override { return processes_; }
  std::optional<ProcessInfo> get(Pid pid, bool) override {
    for (const auto& p : processes_) {
      if (p.identity.pid == pid) return p;
    }
    return std::nullopt;
  }

 private:
  std::vector<ProcessInfo> processes_;
};

/// Collects the alerts it is sent.
class FakeAlertSink final : public AlertSink {
 public:
  Status send(const Alert& alert) override {
    sent.push_back(alert);
    return std::monostate{};
  }
  std::vector<Alert> sent;
};

inline ProcessInfo processInfo(int pid, std::string comm, std::string cmdline = {},
                               std::uint64_t start_time = 0) {
  ProcessInfo p;
  p.identity = ProcessIdentity{Pid{pid}, start_time};
  p.comm = comm;
  p.exe_name = std::move(comm);
  p.cmdline = std::move(cmdline);
  return p;
}

}  // namespace wctmon::testing
