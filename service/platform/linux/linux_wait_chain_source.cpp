#include "platform/linux/linux_wait_chain_source.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>

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

}  // namespace

Result<Snapshot> LinuxWaitChainSource::sample(Pid pid, const SampleOptions& options) {
  SampleContext context;
  ProcessReader reader(context);
  auto* cache = dynamic_cast<ThreadCache*>(options.cache);
  auto first = cache != nullptr
                   ? reader.readCached(pid, *cache, taskstats_.available() ? &taskstats_ : nullptr)
                   : reader.read(pid);
  if (!first) return first.error();

  Snapshot snapshot;
  std::set<Pid> seen{pid};
  std::deque<Pid> todo;
  auto enqueueOwners = [&](const ProcessSample& p) {
    for (const auto owner : ownerProcesses(p)) {
      if (seen.insert(owner).second) todo.push_back(owner);
    }
  };
  if (options.out_of_proc) enqueueOwners(*first);
  snapshot.processes.push_back(std::move(first).value());

  while (!todo.empty()) {
    const Pid next = todo.front();
    todo.pop_front();
    if (snapshot.processes.size() >= kMaxFollowedProcesses) {
      snapshot.warnings.push_back("stopped following chains after " +
                                  std::to_string(kMaxFollowedProcesses) + " processes");
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

std::unique_ptr<SampleCache> LinuxWaitChainSource::makeCache() {
  return std::make_unique<ThreadCache>();
}

Result<Snapshot> LinuxWaitChainSource::sampleAll() {
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

std::vector<ThreadSample> LinuxWaitChainSource::resample(std::span<const ThreadRef> threads) {
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

std::vector<std::optional<std::chrono::milliseconds>> LinuxWaitChainSource::waitTimes(
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

}  // namespace wctmon::linux_platform
