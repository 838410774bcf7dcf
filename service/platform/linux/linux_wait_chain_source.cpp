#include "platform/linux/linux_wait_chain_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>

#include "core/completion.h"
#include "platform/linux/process_reader.h"

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

/// Samples `pid` (reusing `cache` when given) and, with out_of_proc, the processes its waits
/// lead to.
Result<Snapshot> sampleProcess(Pid pid, bool out_of_proc, ThreadCache* cache,
                               TaskstatsClient* taskstats) {
  SampleContext context;
  ProcessReader reader(context);
  auto first = cache != nullptr ? reader.readCached(pid, *cache, taskstats) : reader.read(pid);
  if (!first) return first.error();

  Snapshot snapshot;
  std::set<Pid> seen{pid};
  std::deque<Pid> todo;
  auto enqueueOwners = [&](const ProcessSample& p) {
    for (const auto owner : ownerProcesses(p)) {
      if (seen.insert(owner).second) todo.push_back(owner);
    }
  };
  if (out_of_proc) enqueueOwners(*first);
  snapshot.processes.push_back(std::move(first).value());

  while (!todo.empty()) {
    const Pid next = todo.front();
    todo.pop_front();
    if (snapshot.processes.size() >= LinuxWaitChainSource::kMaxFollowedProcesses) {
      snapshot.warnings.push_back("stopped following chains after " +
                                  std::to_string(LinuxWaitChainSource::kMaxFollowedProcesses) +
                                  " processes");
      break;
    }
    auto process = reader.read(next);
    if (!process) {
      snapshot.warnings.push_back(process.error().message);
      continue;
    }
    enqueueOwners(*process);
    snapshot.processes.push_back(std::move(process).value());
  }
  return snapshot;
}

Result<Snapshot> sampleSystem() {
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
    snapshot.processes.push_back(std::move(process).value());
  }
  if (denied > 0) {
    snapshot.warnings.push_back(std::to_string(denied) + " process(es) could not be read");
  }
  return snapshot;
}

std::vector<ThreadSample> resampleThreads(std::span<const ThreadRef> threads) {
  std::map<Pid, std::vector<Tid>> by_process;
  for (const auto& t : threads) by_process[t.pid].push_back(t.tid);
  SampleContext context;
  ProcessReader reader(context);
  std::vector<ThreadSample> out;
  for (const auto& [pid, tids] : by_process) {
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
    for (auto& t : process->threads) out.push_back(std::move(t));
  }
  return out;
}

/// From the scheduler's clock: `se.exec_start` of the thread's sched file (when it last ran)
/// against the same field of our own, read at once (now, on that clock).
std::vector<std::optional<std::chrono::milliseconds>> readWaitTimes(
    std::span<const ThreadRef> threads) {
  std::vector<std::optional<std::chrono::milliseconds>> out(threads.size());
  if (threads.empty()) return out;
  // The files are ~1.5 KB of text each: that is why only threads in reported chains are asked.
  std::array<char, 4096> buf{};
  const auto execStart = [&](const char* path) -> std::optional<double> {
    const long n = readSmallFile(AT_FDCWD, path, buf);
    if (n <= 0) return std::nullopt;
    return parseSchedExecStart(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  };
  const auto now = execStart("/proc/thread-self/sched");
  if (!now) return out;
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const auto path = "/proc/" + std::to_string(threads[i].pid.value) + "/task/" +
                      std::to_string(threads[i].tid.value) + "/sched";
    const auto last_ran = execStart(path.c_str());
    if (!last_ran || *last_ran > *now) continue;
    out[i] = std::chrono::milliseconds(static_cast<std::int64_t>(*now - *last_ran));
  }
  return out;
}

/// What a session's work shares with the session: it outlives the session while a read runs.
struct SessionState {
  /// 0 for a system session.
  Pid pid;
  std::shared_ptr<TaskstatsClient> taskstats;
  OperationSlot slot;
  /// Used by one read at a time (the slot sees to it); absent for a system session.
  std::unique_ptr<ThreadCache> cache;
  /// Whether the process is a kernel thread, known from the second sample: it has nothing a
  /// cache would save and is named for what it is, every time.
  std::optional<bool> kernel;
  std::uint64_t samples = 0;

  Result<Snapshot> sample(bool out_of_proc) {
    if (cache == nullptr) return sampleSystem();
    // The cache is filled from the second sample on: filling it (a kept-open descriptor per
    // thread) costs more than a plain read, which a one-shot analysis would pay for nothing.
    if (samples++ == 0) return sampleProcess(pid, out_of_proc, nullptr, nullptr);
    if (!kernel) kernel = ProcessReader::isKernelThread(pid);
    return sampleProcess(pid, out_of_proc, *kernel ? nullptr : cache.get(),
                         taskstats->available() ? taskstats.get() : nullptr);
  }
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
    work_([state = state_, completion, out_of_proc = scope.out_of_proc] {
      // A cancelled sample's read is not started at all when it has not begun yet.
      auto result = completion->completed() ? Result<Snapshot>(cancelledError("sample"))
                                            : state->sample(out_of_proc);
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
                        : Result<std::vector<ThreadSample>>(resampleThreads(threads));
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
    : work_(std::move(work)), taskstats_(std::make_shared<TaskstatsClient>()) {}

Result<std::unique_ptr<WaitChainSession>> LinuxWaitChainSource::open(Pid pid) {
  auto state = std::make_shared<SessionState>();
  state->pid = pid;
  state->taskstats = taskstats_;
  state->cache = std::make_unique<ThreadCache>();
  return std::unique_ptr<WaitChainSession>(
      std::make_unique<LinuxWaitChainSession>(work_, std::move(state)));
}

Result<std::unique_ptr<WaitChainSession>> LinuxWaitChainSource::openSystem() {
  auto state = std::make_shared<SessionState>();
  state->taskstats = taskstats_;
  return std::unique_ptr<WaitChainSession>(
      std::make_unique<LinuxWaitChainSession>(work_, std::move(state)));
}

WaitChainSource::Availability LinuxWaitChainSource::availability() const {
  Availability out{"linux-proc", true, {}};
  if (::access("/proc/self/task", R_OK) != 0) {
    out.available = false;
    out.reason = "/proc is not mounted or not readable";
  } else if (::geteuid() != 0) {
    out.reason =
        "not running as root: threads of other users' processes read as NoAccess, and no "
        "registers are captured";
  }
  return out;
}

}  // namespace wctmon::linux_platform
