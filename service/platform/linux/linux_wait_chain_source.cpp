#include "platform/linux/linux_wait_chain_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>

#include "core/completion.h"
#include "platform/linux/go_runtime.h"
#include "platform/linux/jvm_locks.h"
#include "platform/linux/pg_locks.h"
#include "platform/linux/process_reader.h"
#include "platform/linux/read_history.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

std::vector<Pid> ownerProcesses(const ProcessSample& process) {
  std::vector<Pid> out;
  for (const auto& thread : process.threads) {
    if (!thread.wait) continue;
    for (const auto& owner : thread.wait->owner_threads) out.push_back(owner.pid);
    for (const auto pid : thread.wait->owner_processes) out.push_back(pid);
  }
  return out;
}

}  // namespace

/// What runtimes know of their own threads, kept across samples and sessions.
struct RuntimeViews {
  /// The Java-level locks of HotSpot processes, from their thread dumps.
  JvmLocks jvm;
  /// The lock waits of PostgreSQL backends, from their servers' lock tables.
  PgLocks postgres;
};

namespace {

/// What runtimes know of their own threads, added to a process read: the Java-level locks of a
/// HotSpot process, the lock a PostgreSQL backend waits for and, for analyses (which a person
/// asks for; the monitor's periodic samples have no use for them and do not pay for reading
/// them), a Go program's goroutines.
void addRuntimeViews(ProcessSample& process, const SampleScope& scope, RuntimeViews& views) {
  views.jvm.apply(process, scope.on_demand);
  views.postgres.apply(process, scope.on_demand);
  if (scope.on_demand) applyGoRuntime(process);
}

/// How old another sample's read of a process may be for a sample that follows a chain into it
/// to take it as read: about an interval (a watched process's own sample reads it once each).
constexpr std::chrono::seconds kPeerReadsReusedFor{1};

/// Samples `pid` (reusing `cache` when given) and, with out_of_proc, every process its waits
/// lead to, however many. With `shared` (periodic samples), the processes followed into are
/// taken from other samples' recent reads, and the reads made are kept for theirs.
Result<Snapshot> sampleProcess(Pid pid, const SampleScope& scope, ThreadCache* cache,
                               TaskstatsClient* taskstats, RuntimeViews& views,
                               SharedReads* shared) {
  using Steady = std::chrono::steady_clock;
  SampleContext context(shared != nullptr ? &shared->descriptors : nullptr);
  ReadHistory* history = shared != nullptr ? &shared->processes : nullptr;
  ProcessReader reader(context);
  const auto started = Steady::now();
  auto first = cache != nullptr ? reader.readCached(pid, *cache, taskstats) : reader.read(pid);
  if (!first) return first.error();
  addRuntimeViews(*first, scope, views);

  Snapshot snapshot;
  std::set<Pid> seen{pid};
  std::deque<Pid> todo;
  auto enqueue = [&](const std::vector<Pid>& owners) {
    for (const auto owner : owners) {
      if (seen.insert(owner).second) todo.push_back(owner);
    }
  };
  const auto owners = scope.out_of_proc ? ownerProcesses(*first) : std::vector<Pid>{};
  // Its own read is worth keeping when its chains are followed out of it, or when others' lead
  // into it (a sample that leaves the other processes of its cycle to another's).
  if (history != nullptr && (!owners.empty() || history->followed(pid, Steady::now()))) {
    history->keep(*first, started, Steady::now(), ReadHistory::ReadBy::kItself);
  }
  enqueue(owners);
  snapshot.processes.push_back(std::move(first).value());

  while (!todo.empty()) {
    const Pid next = todo.front();
    todo.pop_front();
    if (history != nullptr) {
      const auto now = Steady::now();
      if (auto kept = history->recent(next, now - kPeerReadsReusedFor, now)) {
        enqueue(ownerProcesses(*kept));
        snapshot.processes.push_back(std::move(kept).value());
        continue;
      }
    }
    const auto began = Steady::now();
    auto process = reader.read(next);
    if (!process) {
      snapshot.warnings.push_back(process.error().message);
      continue;
    }
    addRuntimeViews(*process, scope, views);
    if (history != nullptr) {
      history->keep(*process, began, Steady::now(), ReadHistory::ReadBy::kFollower);
    }
    enqueue(ownerProcesses(*process));
    snapshot.processes.push_back(std::move(process).value());
  }
  return snapshot;
}

Result<Snapshot> sampleSystem(const SampleScope& scope, RuntimeViews& views) {
  SampleContext context;
  ProcessReader reader(context);
  Snapshot snapshot;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return makeError(ErrorCode::kIo, "cannot list /proc");
  std::vector<Pid> pids;
  while (const dirent* entry = ::readdir(dir)) {
    if (auto pid = parseInt(entry->d_name)) pids.push_back(Pid{static_cast<std::int32_t>(*pid)});
  }
  ::closedir(dir);
  std::sort(pids.begin(), pids.end());
  std::size_t denied = 0;
  for (const auto pid : pids) {
    if (ProcessReader::isKernelThread(pid)) continue;
    auto process = reader.read(pid);
    if (!process) {
      // Processes come and go while the system is read; those are not errors of the analysis.
      if (process.error().code == ErrorCode::kAccessDenied) ++denied;
      continue;
    }
    addRuntimeViews(*process, scope, views);
    snapshot.processes.push_back(std::move(process).value());
  }
  if (denied > 0) {
    snapshot.warnings.push_back(std::to_string(denied) + " process(es) could not be read");
  }
  return snapshot;
}

/// The threads read again. With `shared` (periodic samples), a cycle that reads already made
/// prove whole (ReadHistory::provenBlocked) is not read again, and what is read is kept.
std::vector<ThreadSample> resampleThreads(std::span<const ThreadRef> threads, RuntimeViews& views,
                                          SharedReads* shared) {
  using Steady = std::chrono::steady_clock;
  ReadHistory* history = shared != nullptr ? &shared->processes : nullptr;
  if (history != nullptr) {
    if (auto proven = history->provenBlocked(threads)) return std::move(proven).value();
  }
  std::map<Pid, std::vector<Tid>> by_process;
  for (const auto& t : threads) by_process[t.pid].push_back(t.tid);
  SampleContext context(shared != nullptr ? &shared->descriptors : nullptr);
  ProcessReader reader(context);
  std::vector<ThreadSample> out;
  for (const auto& [pid, tids] : by_process) {
    const auto began = Steady::now();
    auto process = reader.read(pid, tids);
    if (!process) {
      for (const auto tid : tids) {
        ThreadSample gone;
        gone.id = ThreadRef{pid, tid};
        gone.status = ObjectStatus::kError;
        gone.name = kExitedThreadName;
        out.push_back(std::move(gone));
      }
      continue;
    }
    // The same answers as the sample's, for the threads that did not move since.
    views.jvm.apply(*process, /*on_demand=*/false);
    views.postgres.apply(*process, /*on_demand=*/false);
    if (history != nullptr) history->keepThreads(*process, began, Steady::now());
    for (auto& t : process->threads) out.push_back(std::move(t));
  }
  return out;
}

/// What a session's work shares with the session: it outlives the session while a read runs.
struct SessionState {
  /// 0 for a system session.
  Pid pid;
  std::shared_ptr<TaskstatsClient> taskstats;
  std::shared_ptr<RuntimeViews> views;
  /// What the periodic samples of every session share.
  std::shared_ptr<SharedReads> shared;
  /// Whether the last sample shared its reads: a periodic one (an analysis a person asks for
  /// reads everything itself, at the moment asked).
  bool shares_reads = false;
  OperationSlot slot;
  /// Used by one read at a time (the slot sees to it); absent for a system session.
  std::unique_ptr<ThreadCache> cache;
  /// Whether the process is a kernel thread, known from the second sample: it has nothing a
  /// cache would save and is named for what it is, every time.
  std::optional<bool> kernel;
  std::uint64_t samples = 0;

  Result<Snapshot> sample(const SampleScope& scope) {
    shares_reads = cache != nullptr && !scope.on_demand;
    if (cache == nullptr) return sampleSystem(scope, *views);
    // The cache is filled from the second sample on: filling it (a kept-open descriptor per
    // thread) costs more than a plain read, which a one-shot analysis would pay for nothing.
    if (samples++ == 0) return sampleProcess(pid, scope, nullptr, nullptr, *views, sharedReads());
    if (!kernel) kernel = ProcessReader::isKernelThread(pid);
    return sampleProcess(pid, scope, *kernel ? nullptr : cache.get(),
                         taskstats->available() ? taskstats.get() : nullptr, *views, sharedReads());
  }

  [[nodiscard]] SharedReads* sharedReads() const { return shares_reads ? shared.get() : nullptr; }
};

/// "sample of pid 42": the name of an operation of `state`'s session, made only when an error
/// needs it.
auto operationOf(const char* operation, const SessionState& state) {
  return [operation, pid = state.pid, system = state.cache == nullptr] {
    return system ? std::string(operation) + " of the system"
                  : std::string(operation) + " of pid " + std::to_string(pid.value);
  };
}

class LinuxWaitChainSession final : public WaitChainSession {
 public:
  LinuxWaitChainSession(Executor work, std::shared_ptr<SessionState> state)
      : work_(std::move(work)), state_(std::move(state)) {}
  ~LinuxWaitChainSession() override { state_->slot.cancel(); }
  LinuxWaitChainSession(const LinuxWaitChainSession&) = delete;
  LinuxWaitChainSession& operator=(const LinuxWaitChainSession&) = delete;

  void asyncSample(SampleScope scope, Executor executor, SampleHandler done) override {
    auto completion = Completion<Snapshot>::make(std::move(executor), std::move(done));
    if (!beginOperation(state_->slot, completion, operationOf("sample", *state_))) return;
    // WCT's further flags have no counterpart: every kind of wait is followed here.
    work_([state = state_, completion, scope] {
      // A cancelled sample's read is not started at all when it has not begun yet.
      auto result = completion->completed() ? Result<Snapshot>(cancelledError("sample"))
                                            : state->sample(scope);
      // Free first, so that the handler may start the next operation (the confirmation).
      state->slot.end();
      completion->completeFromWork(std::move(result));
    });
  }

  void asyncResample(std::vector<ThreadRef> threads, Executor executor,
                     ThreadsHandler done) override {
    auto completion =
        Completion<std::vector<ThreadSample>>::make(std::move(executor), std::move(done));
    if (!beginOperation(state_->slot, completion, operationOf("re-read", *state_))) return;
    work_([state = state_, completion, threads = std::move(threads)] {
      auto result = completion->completed()
                        ? Result<std::vector<ThreadSample>>(cancelledError("re-read"))
                        : Result<std::vector<ThreadSample>>(
                              resampleThreads(threads, *state->views, state->sharedReads()));
      state->slot.end();
      completion->completeFromWork(std::move(result));
    });
  }

  void cancel() override { state_->slot.cancel(); }

  std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
      std::span<const ThreadRef> threads) override {
    return readWaitTimes(threads);
  }

 private:
  Executor work_;
  std::shared_ptr<SessionState> state_;
};

}  // namespace

LinuxWaitChainSource::LinuxWaitChainSource(Executor work)
    : work_(std::move(work)),
      taskstats_(std::make_shared<TaskstatsClient>()),
      views_(std::make_shared<RuntimeViews>()),
      shared_(std::make_shared<SharedReads>()) {}

Result<std::unique_ptr<WaitChainSession>> LinuxWaitChainSource::open(Pid pid) {
  auto state = std::make_shared<SessionState>();
  state->pid = pid;
  state->taskstats = taskstats_;
  state->views = views_;
  state->shared = shared_;
  state->cache = std::make_unique<ThreadCache>();
  return std::unique_ptr<WaitChainSession>(
      std::make_unique<LinuxWaitChainSession>(work_, std::move(state)));
}

Result<std::unique_ptr<WaitChainSession>> LinuxWaitChainSource::openSystem() {
  auto state = std::make_shared<SessionState>();
  state->taskstats = taskstats_;
  state->views = views_;
  return std::unique_ptr<WaitChainSession>(
      std::make_unique<LinuxWaitChainSession>(work_, std::move(state)));
}

namespace {

/// Whether this process may read and stop other users' threads: CAP_SYS_PTRACE in its effective
/// set (root's, or an unprivileged account's given it, as the systemd unit does).
bool mayTraceOthers() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  if (::syscall(SYS_capget, &header, data.data()) != 0) return ::geteuid() == 0;
  return (data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective & CAP_TO_MASK(CAP_SYS_PTRACE)) != 0;
}

}  // namespace

WaitChainSource::Availability LinuxWaitChainSource::availability() const {
  Availability out{"linux-proc", true, {}};
  if (::access("/proc/self/task", R_OK) != 0) {
    out.available = false;
    out.reason = "/proc is not mounted or not readable";
  } else if (!mayTraceOthers()) {
    out.reason =
        "neither root nor given CAP_SYS_PTRACE: threads of other users' processes read as "
        "NoAccess, and no registers are captured";
  }
  return out;
}

}  // namespace wctmon::linux_platform
