#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/wait_model.h"

namespace wctmon {

/// A process across PID reuse: the pid and the start time together.
struct ProcessIdentity {
  Pid pid;
  std::uint64_t start_time = 0;
  friend auto operator<=>(const ProcessIdentity&, const ProcessIdentity&) = default;
};

/// A process an incident involves, under the name it had when the incident last changed.
struct IncidentProcess {
  ProcessIdentity identity;
  std::string name;
  /// The title the process gave itself by rewriting its command line (PostgreSQL's "postgres:
  /// app db [local] UPDATE waiting", nginx, sshd); empty when it did not.
  std::string title{};
  friend bool operator==(const IncidentProcess&, const IncidentProcess&) = default;
};

/// "postgres", or "postgres [postgres: app db [local] UPDATE waiting]" when it has a title.
[[nodiscard]] std::string withTitle(const std::string& name, const std::string& title);

enum class IncidentKind {
  kDeadlock,
  kHang,
  kUnresponsive,
  kBusy,
  kStall,
  kServiceHung,
  kWindowHung
};

/// A dump of a process that a debugger opens (an ELF core, a minidump), with the diagnosis it was
/// taken for inside: where it is and what it holds, or why there is none.
struct DumpRecord {
  /// Empty when no dump was written (`error` says why).
  std::string path{};
  std::uint64_t bytes = 0;
  /// SHA-256 of the file as written, in lowercase hex.
  std::string sha256{};
  /// "elf-core", "minidump".
  std::string format{};
  /// How it was taken: which threads were held for their registers, which read without
  /// stopping, memory left out or cut at the cap.
  std::string method{};
  /// Why no dump was written (a full disk, the dumps' total cap), or why it is gone (deleted to
  /// make room for newer dumps).
  std::string error{};
  friend bool operator==(const DumpRecord&, const DumpRecord&) = default;
};
enum class IncidentState { kOpen, kResolved };

/// "deadlock" / "hang", "open" / "resolved".
[[nodiscard]] const char* toString(IncidentKind kind);
[[nodiscard]] const char* toString(IncidentState state);

/// One deadlock (of one or several processes) or hang, from the moment it is seen until it is
/// gone.
struct Incident {
  using TimePoint = std::chrono::system_clock::time_point;

  /// Given when the incident is decided (IncidentIds, above every id the store holds); the store
  /// keeps it. 0 for an incident built by hand that was never decided.
  std::int64_t id = 0;
  IncidentKind kind = IncidentKind::kDeadlock;
  IncidentState state = IncidentState::kOpen;
  /// The first process: the one whose sample opened the incident (processes[0]).
  ProcessIdentity process;
  std::string process_name;
  /// Every process involved, the first one first: a deadlock across processes lists each process
  /// of its cycle and of the threads blocked behind it; a hang lists its own process.
  std::vector<IncidentProcess> processes;
  /// The target that watches the process.
  std::string target;
  /// What makes two sightings the same incident: the cycle's threads, or the hung thread and its
  /// wait.
  std::string signature;
  /// The threads of the cycle, or the hung thread.
  std::vector<ThreadRef> threads;
  /// Threads blocked behind the cycle or the hung thread.
  std::vector<ThreadRef> spurs;
  TimePoint opened_at;
  TimePoint updated_at;
  std::optional<TimePoint> resolved_at;
  std::string resolution;
  std::string summary;
  std::vector<WaitChain> chains;
  std::vector<ThreadCapture> evidence;
  /// The dump taken of its process when it opened (capture.dump); none when the policy asks for
  /// none.
  std::optional<DumpRecord> dump;
};

}  // namespace wctmon
