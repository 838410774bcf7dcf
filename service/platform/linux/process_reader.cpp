#include "platform/linux/process_reader.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "platform/linux/unique_fd.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {
namespace {

/// A kernel thread runs only in the kernel: its syscall file says nothing (all zeros), so it is
/// named for what it is, with its wait channel, instead of a made-up system call.
void markKernelThreads(std::vector<TaskReading>& raws, int task_fd) {
  for (auto& raw : raws) {
    if (isExited(raw.sample) || raw.sample.state == RunState::kRunning) continue;
    raw.syscall.reset();
    const std::string wchan = readWchan(task_fd, raw.sample.id.tid.value);
    raw.sample.status = ObjectStatus::kBlocked;
    raw.sample.wait = kernelThreadWait(wchan);
  }
}

/// A thread that exited between the listing and its read is simply no longer there.
void dropExited(std::vector<TaskReading>& raws) {
  std::erase_if(raws, [](const TaskReading& r) { return isExited(r.sample); });
}

}  // namespace

void ProcessReader::classify(Pid pid, int task_fd, TaskList& tasks,
                             std::span<TaskReading> threads) {
  ProcWaitLookup lookup(context_, pid, task_fd, tasks);
  classifyWaits(pid, threads, lookup);
}

bool ProcessReader::isKernelThread(Pid pid) {
  auto proc_fd = openProcessDirectory(pid);
  if (!proc_fd) return false;
  auto identity = readProcessHeader(proc_fd->get(), pid);
  return identity.ok() && isKernelThreadFlags(identity->flags);
}

Result<ProcessSample> ProcessReader::read(Pid pid, std::span<const Tid> only) {
  auto proc_fd = openProcessDirectory(pid);
  if (!proc_fd) return proc_fd.error();
  auto identity = readProcessHeader(proc_fd->get(), pid);
  if (!identity) return identity.error();
  UniqueFd task_fd(::openat(proc_fd->get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return noSuchProcess(pid);
  TaskList tasks(task_fd.get());

  std::vector<TaskReading> raws;
  if (!only.empty()) {
    for (const auto tid : only) raws.push_back(readTask(task_fd.get(), pid, tid.value));
  } else {
    raws.reserve(tasks.all().size());
    for (const auto tid : tasks.all()) raws.push_back(readTask(task_fd.get(), pid, tid));
    dropExited(raws);
  }
  if (isKernelThreadFlags(identity->flags)) {
    markKernelThreads(raws, task_fd.get());
  } else {
    classify(pid, task_fd.get(), tasks, raws);
  }
  // Only a thread waiting on an owner can be part of a cycle and need the run count that
  // confirms one; reading it for every idle thread would add a third of the cost of a sample.
  for (auto& raw : raws) {
    const auto& w = raw.sample.wait;
    if (!only.empty() || (w && w->status == ObjectStatus::kOwned)) {
      raw.sample.context_switches = readRunCount(task_fd.get(), raw.sample.id.tid.value);
    }
  }

  // The pid may have been reused while we read: the start time tells.
  auto after = readProcessHeader(proc_fd->get(), pid);
  if (!after || after->start_time != identity->start_time) return exitedDuringRead(pid);
  ProcessSample out;
  out.pid = pid;
  out.name = identity->name;
  out.start_time = identity->start_time;
  out.threads.reserve(raws.size());
  for (auto& raw : raws) out.threads.push_back(std::move(raw.sample));
  return out;
}

Result<ProcessSample> ProcessReader::readCached(Pid pid, ThreadCache& cache,
                                                TaskstatsClient* taskstats) {
  const bool full = cache.samples_ % ThreadCache::kFullRefreshEvery == 0;
  const bool owners = cache.samples_ % ThreadCache::kOwnersRefreshEvery == 0;
  if (!cache.task_fd_.valid()) {
    cache.clear();
    auto proc_fd = openProcessDirectory(pid);
    if (!proc_fd) return proc_fd.error();
    cache.task_fd_ = UniqueFd(::openat(proc_fd->get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    cache.stat_fd_ = UniqueFd(::openat(proc_fd->get(), "stat", O_RDONLY | O_CLOEXEC));
    if (!cache.task_fd_.valid() || !cache.stat_fd_.valid()) {
      cache.task_fd_.reset();
      return noSuchProcess(pid);
    }
  }
  // Everything below reads through descriptors opened on this very process: once it is gone
  // they fail, and a new process that takes over the pid is out of their reach. The process's
  // own stat (which sums over all its threads) is read only when the cache starts and on full
  // refreshes, for the name.
  const int task_fd = cache.task_fd_.get();
  if (full || cache.name_.empty()) {
    auto stat = readStatAt(cache.stat_fd_.get());
    if (!stat) {
      cache.task_fd_.reset();
      return noSuchProcess(pid);
    }
    if (cache.start_time_ != stat->start_time) {
      const auto samples = cache.samples_;
      cache.clear();
      cache.samples_ = samples;
      cache.start_time_ = stat->start_time;
    }
    cache.name_ = stat->comm;
  }
  ++cache.samples_;

  // The task directory's link count is 2 + the number of threads, without walking them; it
  // falls to 2 once the process is gone.
  struct stat task_stat {};
  const bool counted = ::fstat(task_fd, &task_stat) == 0 && task_stat.st_nlink > 2;
  const std::size_t thread_count = counted ? task_stat.st_nlink - 2 : 0;

  // Activity is read before anything else, like the run counts below: if a thread runs after
  // it, the next sample sees it move.
  const bool refresh = full || cache.samples_ % ThreadCache::kOwnersRefreshEvery == 1;
  const auto activity =
      taskstats != nullptr ? taskstats->activity(pid) : std::optional<ProcessActivity>();
  if (!refresh && activity && cache.activity_ == activity && cache.all_blocked_ &&
      !cache.threads_.empty() && counted && thread_count == cache.threads_.size()) {
    // No thread ran since the last sample, which found them all blocked: it still holds.
    ProcessSample out;
    out.pid = pid;
    out.name = cache.name_;
    out.start_time = cache.start_time_;
    out.threads.reserve(cache.threads_.size());
    for (const auto& [tid, entry] : cache.threads_) {
      if (entry.last) out.threads.push_back(*entry.last);
    }
    cache.reused_ = out.threads.size();
    cache.reread_ = 0;
    return out;
  }
  cache.activity_ = activity;

  // The run count is read before anything else: if the thread runs after it, the next sample
  // sees the count move and reads the thread again.
  std::vector<ThreadSample> reused;
  std::vector<TaskReading> raws;
  bool all_known_alive = true;
  auto visit = [&](std::int32_t tid, ThreadCache::Entry& entry) {
    const auto runs = cache.runs(task_fd, tid, entry);
    if (!runs) all_known_alive = false;
    const bool stale_owners =
        owners && entry.last && entry.last->wait && !entry.last->wait->owner_processes.empty();
    if (!full && !stale_owners && runs && entry.runs == runs && entry.last &&
        entry.last->status == ObjectStatus::kBlocked) {
      reused.push_back(*entry.last);
      return;
    }
    entry.runs = runs;
    auto raw = readTask(task_fd, pid, tid);
    raw.sample.context_switches = runs;
    raws.push_back(std::move(raw));
  };
  TaskList tasks(task_fd);
  // Same number of threads, and every known one still there: no thread came or went, so the
  // task directory need not be listed again.
  const bool same_threads = !full && counted && thread_count == cache.threads_.size();
  if (same_threads) {
    reused.reserve(cache.threads_.size());
    for (auto& [tid, entry] : cache.threads_) visit(tid, entry);
  }
  if (!same_threads || !all_known_alive) {
    reused.clear();
    raws.clear();
    const auto& tids = tasks.all();
    for (const auto tid : tids) visit(tid, cache.threads_[tid]);
    // A thread gone takes its kept-open descriptor with it.
    std::erase_if(cache.threads_, [&](const auto& item) {
      return !std::binary_search(tids.begin(), tids.end(), item.first);
    });
  }
  dropExited(raws);
  cache.reused_ = reused.size();
  cache.reread_ = raws.size();
  classify(pid, task_fd, tasks, raws);
  for (const auto& raw : raws) {
    cache.threads_[raw.sample.id.tid.value].last = raw.sample;
    // The process's name is its main thread's: a main thread read again (as one that execs
    // is, since it ran) brings a new name at once, not at the next full refresh.
    if (raw.sample.id.tid.value == pid.value && !isExited(raw.sample))
      cache.name_ = raw.sample.name;
  }

  if (reused.empty() && raws.empty()) {
    cache.task_fd_.reset();
    return exitedDuringRead(pid);
  }
  ProcessSample out;
  out.pid = pid;
  out.name = cache.name_;
  out.start_time = cache.start_time_;
  cache.all_blocked_ =
      std::all_of(raws.begin(), raws.end(),
                  [](const TaskReading& r) { return r.sample.status == ObjectStatus::kBlocked; }) &&
      std::all_of(reused.begin(), reused.end(),
                  [](const ThreadSample& t) { return t.status == ObjectStatus::kBlocked; });
  // Both lists are in tid order already (the cache is ordered, so is the task listing).
  out.threads.reserve(reused.size() + raws.size());
  auto r = raws.begin();
  for (auto& sample : reused) {
    for (; r != raws.end() && r->sample.id < sample.id; ++r)
      out.threads.push_back(std::move(r->sample));
    out.threads.push_back(std::move(sample));
  }
  for (; r != raws.end(); ++r) out.threads.push_back(std::move(r->sample));
  return out;
}

ThreadCache::~ThreadCache() = default;

void ThreadCache::clear() {
  threads_.clear();
  samples_ = 0;
  activity_.reset();
  all_blocked_ = false;
}

std::size_t ThreadCache::openDescriptors() const {
  return static_cast<std::size_t>(std::count_if(
      threads_.begin(), threads_.end(), [](const auto& e) { return e.second.schedstat.valid(); }));
}

std::optional<std::uint64_t> ThreadCache::runs(int task_fd, std::int32_t tid, Entry& entry) {
  if (!entry.schedstat.valid()) {
    std::array<char, 32> path{};
    std::snprintf(path.data(), path.size(), "%d/schedstat", tid);
    entry.schedstat = BudgetedFd::openAt(DescriptorBudget::process(), task_fd, path.data());
    // Out of budget (or gone): a fresh descriptor for this one read.
    if (!entry.schedstat.valid()) return readRunCount(task_fd, tid);
  }
  return readRunCount(entry.schedstat.get());
}

}  // namespace wctmon::linux_platform
