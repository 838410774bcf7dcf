#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "core/ports/alert_sink.h"
#include "core/ports/process_catalog.h"
#include "core/ports/process_dumper.h"

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

/// A dumper that writes a file of `bytes` (at most the request's cap) with the diagnosis at its
/// start, as a dumper makes a new file: never over an existing one.
class FakeProcessDumper final : public ProcessDumper {
 public:
  [[nodiscard]] Result<DumpWritten> dump(Pid pid, const DumpRequest& request) override {
    requests.push_back(request);
    pids.push_back(pid);
    if (fail) return makeError(ErrorCode::kIo, "No space left on device");
    if (std::filesystem::exists(request.path)) return makeError(ErrorCode::kIo, "exists");
    const auto size = request.max_bytes > 0 ? std::min(bytes, request.max_bytes) : bytes;
    std::ofstream out(request.path, std::ios::binary);
    out << request.diagnosis;
    out.seekp(static_cast<std::streamoff>(std::max<std::uint64_t>(size, 1) - 1));
    out.put('\n');
    return DumpWritten{size, "elf-core", "pid " + std::to_string(pid.value) + ", all read"};
  }
  [[nodiscard]] std::string_view extension() const override { return ".core"; }

  std::uint64_t bytes = 1024 * 1024;
  bool fail = false;
  std::vector<DumpRequest> requests;
  std::vector<Pid> pids;
};

}  // namespace wctmon::testing
