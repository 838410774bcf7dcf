#pragma once

#include <chrono>
#include <initializer_list>
#include <string>

#include "model/snapshot.h"

namespace wctmon::testing {

/// Builds snapshots by hand for core tests.
class SnapshotBuilder {
 public:
  SnapshotBuilder& process(int pid, std::string name = "proc") {
    ProcessSample p;
    p.pid = Pid{pid};
    p.name = std::move(name);
    snapshot_.processes.push_back(std::move(p));
    return *this;
  }

  /// A running thread of the last process.
  SnapshotBuilder& running(int tid) { return add(tid, ObjectStatus::kRunning, std::nullopt); }

  /// A thread of the last process waiting on an object with no owner (condvar, sleep...).
  SnapshotBuilder& ownerless(int tid, ObjectType type = ObjectType::kFutex) {
    WaitObject w;
    w.type = type;
    w.status = ObjectStatus::kBlocked;
    w.name = "0x" + std::to_string(tid);
    return add(tid, ObjectStatus::kBlocked, w);
  }

  /// A thread of the last process waiting on a mutex owned by `owner` (pid, tid).
  SnapshotBuilder& waitsOnThread(int tid, ThreadRef owner, ObjectType type = ObjectType::kMutex) {
    WaitObject w;
    w.type = type;
    w.status = ObjectStatus::kOwned;
    w.name = "m" + std::to_string(owner.tid.value);
    w.key = static_cast<std::uint64_t>(owner.tid.value);
    w.owner_threads.push_back(owner);
    return add(tid, ObjectStatus::kBlocked, w);
  }

  /// A thread waiting on an object held by whole processes (pipe, file lock, child).
  SnapshotBuilder& waitsOnProcesses(int tid, std::initializer_list<int> pids,
                                    ObjectType type = ObjectType::kPipe) {
    WaitObject w;
    w.type = type;
    w.status = ObjectStatus::kOwned;
    w.name = "pipe";
    for (int p : pids) w.owner_processes.push_back(Pid{p});
    return add(tid, ObjectStatus::kBlocked, w);
  }

  /// The last thread's wait ends after `left` (a timed wait).
  SnapshotBuilder& timeout(std::chrono::milliseconds left) {
    snapshot_.processes.back().threads.back().wait->timeout = left;
    return *this;
  }

  /// The last thread is stopped (SIGSTOP) in its wait.
  SnapshotBuilder& stopped() {
    snapshot_.processes.back().threads.back().state = RunState::kStopped;
    return *this;
  }

  SnapshotBuilder& switches(std::uint64_t count) {
    snapshot_.processes.back().threads.back().context_switches = count;
    return *this;
  }

  [[nodiscard]] Snapshot build() const { return snapshot_; }

 private:
  SnapshotBuilder& add(int tid, ObjectStatus status, std::optional<WaitObject> wait) {
    ThreadSample t;
    t.id = ThreadRef{snapshot_.processes.back().pid, Tid{tid}};
    t.name = "t" + std::to_string(tid);
    t.state = status == ObjectStatus::kRunning ? RunState::kRunning : RunState::kSleeping;
    t.status = status;
    t.wait = std::move(wait);
    snapshot_.processes.back().threads.push_back(std::move(t));
    return *this;
  }

  Snapshot snapshot_;
};

inline ThreadRef T(int pid, int tid) { return ThreadRef{Pid{pid}, Tid{tid}}; }

/// Process 10: threads 11 and 12 each wait for a mutex the other holds (with the given run
/// counts); thread 13 sits in an ownerless wait.
inline Snapshot abbaSnapshot(std::string name = "server", std::uint64_t switches_a = 1,
                             std::uint64_t switches_b = 1) {
  return SnapshotBuilder()
      .process(10, std::move(name))
      .waitsOnThread(11, T(10, 12))
      .switches(switches_a)
      .waitsOnThread(12, T(10, 11))
      .switches(switches_b)
      .ownerless(13)
      .build();
}

}  // namespace wctmon::testing
