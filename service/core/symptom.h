#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/ids.h"
#include "model/incident.h"

namespace wctmon {

/// A hang seen from outside a process's wait chains: a liveness probe that fails, a Windows
/// service stuck in a pending state, a window that does not answer messages. Whoever watches
/// for it reports the symptoms of its kind that hold now; each one opens an incident of its
/// kind carrying the process's wait chains, which resolves once it is no longer reported.
struct Symptom {
  /// kUnresponsive, kServiceHung or kWindowHung.
  IncidentKind kind = IncidentKind::kUnresponsive;
  /// The process it is about.
  Pid pid;
  /// The target it is reported for: the probed target, "services", the target watching the
  /// window's process.
  std::string target;
  /// What makes two reports the same symptom, within its kind: "probe http://127.0.0.1:8080/",
  /// "service Spooler", "window 0x1a2b4".
  std::string key;
  /// One line for people: what fails and for how long ("http://127.0.0.1:8080/: timed out after
  /// 2000 ms, 3 times in a row").
  std::string summary;
  /// Threads it names (a window's thread); empty: the process's blocked threads.
  std::vector<Tid> threads;

  friend bool operator==(const Symptom&, const Symptom&) = default;
};

/// The signature of a symptom's incident: its kind and key ("busy thread 4242").
[[nodiscard]] inline std::string symptomSignature(IncidentKind kind, std::string_view key) {
  return std::string(toString(kind)) + " " + std::string(key);
}

/// The key of a busy thread's symptom, and of a stalled process's.
[[nodiscard]] inline std::string busyKey(Tid tid) { return "thread " + std::to_string(tid.value); }
[[nodiscard]] inline std::string stallKey(Pid pid) { return "pid " + std::to_string(pid.value); }

}  // namespace wctmon
