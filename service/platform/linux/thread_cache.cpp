#include "platform/linux/thread_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>

namespace wctmon::linux_platform {

ThreadCache::ThreadCache() : ThreadCache("/proc", DescriptorBudget::process()) {}

ThreadCache::ThreadCache(std::string proc_root, DescriptorBudget& budget)
    : proc_root_(std::move(proc_root)), budget_(budget) {}

ThreadCache::~ThreadCache() = default;

std::string ThreadCache::readTitle(Pid pid) const {
  std::array<char, 4096> buf{};
  const auto path = proc_root_ + "/" + std::to_string(pid.value) + "/cmdline";
  const long n = readSmallFile(AT_FDCWD, path.c_str(), buf);
  return n > 0 ? processTitle(std::string_view(buf.data(), static_cast<std::size_t>(n))) : "";
}

Result<int> ThreadCache::begin(Pid pid) {
  if (!task_fd_.valid()) {
    // First use, or the process was found gone: whatever opens now is read as a new process,
    // with its own name and start time (which tell the caller when the pid was taken over).
    clear();
    samples_ = 0;
    name_.clear();
    start_time_ = 0;
    auto proc_fd = openProcessDirectory(pid, proc_root_);
    if (!proc_fd) return proc_fd.error();
    task_fd_ = UniqueFd(::openat(proc_fd->get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    stat_fd_ = UniqueFd(::openat(proc_fd->get(), "stat", O_RDONLY | O_CLOEXEC));
    if (!task_fd_.valid() || !stat_fd_.valid()) {
      close();
      return noSuchProcess(pid);
    }
  }
  pid_ = pid;
  full_ = samples_ % kFullRefreshEvery == 0;
  owners_ = samples_ % kOwnersRefreshEvery == 0;
  // Everything below reads through descriptors opened on this very process: once it is gone
  // they fail, and a new process that takes over the pid is out of their reach. The process's
  // own stat (which sums over all its threads) is read only when the cache starts and on full
  // refreshes, for the name.
  if (full_ || name_.empty()) {
    auto stat = readStatAt(stat_fd_.get());
    if (!stat) {
      close();
      return noSuchProcess(pid);
    }
    if (stat->state == RunState::kZombie && zombieHasExited(task_fd_.get())) {
      close();
      return zombieProcess(pid, stat->comm, stat->ppid);
    }
    if (start_time_ != stat->start_time) {
      clear();
      start_time_ = stat->start_time;
    }
    name_ = std::move(stat->comm);
    title_ = readTitle(pid);
  }
  ++samples_;

  // The task directory's link count is 2 + the number of threads, without walking them; it
  // falls to 2 once the process is gone.
  struct stat task_stat {};
  thread_count_.reset();
  if (::fstat(task_fd_.get(), &task_stat) == 0 && task_stat.st_nlink > 2) {
    thread_count_ = task_stat.st_nlink - 2;
  }
  return task_fd_.get();
}

std::optional<ProcessSample> ThreadCache::unchanged(
    const std::optional<ProcessActivity>& activity) {
  if (!full_ && !owners_ && activity && activity_ == activity && all_blocked_ &&
      !threads_.empty() && thread_count_ == threads_.size()) {
    // No thread ran since the last sample, which found them all blocked: it still holds.
    auto out = header();
    out.threads.reserve(threads_.size());
    for (const auto& [tid, entry] : threads_) {
      if (entry.last) out.threads.push_back(*entry.last);
    }
    reused_ = out.threads.size();
    reread_ = 0;
    return out;
  }
  activity_ = activity;
  return std::nullopt;
}

ThreadCache::Sweep ThreadCache::sweep(TaskList& tasks) {
  // The run count is read before the thread: if the thread runs after it, the next sample sees
  // the count move and reads the thread again.
  Sweep out;
  bool all_known_alive = true;
  auto visit = [&](std::int32_t tid, Entry& entry) {
    const auto times = this->times(tid, entry);
    const auto runs = times ? std::optional<std::uint64_t>(times->runs) : std::nullopt;
    if (!runs) all_known_alive = false;
    const bool stale_owners =
        owners_ && entry.last && entry.last->wait && !entry.last->wait->owner_processes.empty();
    if (!full_ && !stale_owners && runs && entry.runs == runs && entry.last &&
        entry.last->status == ObjectStatus::kBlocked) {
      out.reused.push_back(*entry.last);
      return;
    }
    using Ns = std::chrono::nanoseconds;
    out.stale.push_back(StaleThread{tid, runs,
                                    times ? std::optional<Ns>(times->cpu_ns) : std::nullopt,
                                    times ? std::optional<Ns>(times->queued_ns) : std::nullopt});
  };
  // Same number of threads, and every known one still there: no thread came or went, so the
  // task directory need not be listed again.
  const bool same_threads = !full_ && thread_count_ == threads_.size();
  if (same_threads) {
    out.reused.reserve(threads_.size());
    for (auto& [tid, entry] : threads_) visit(tid, entry);
  }
  if (!same_threads || !all_known_alive) {
    out.reused.clear();
    out.stale.clear();
    const auto& tids = tasks.all();
    for (const auto tid : tids) visit(tid, threads_[tid]);
    std::erase_if(threads_, [&](const auto& item) {
      return !std::binary_search(tids.begin(), tids.end(), item.first);
    });
  }
  return out;
}

Result<ProcessSample> ThreadCache::complete(std::vector<ThreadSample> reused,
                                            std::span<TaskReading> reread) {
  reused_ = reused.size();
  reread_ = reread.size();
  for (const auto& reading : reread) {
    // The run count is stored with the reading it came before, not by the sweep: a sweep that
    // starts over (a known thread was gone) would find the new count already stored and reuse
    // the old reading of a thread that ran.
    auto& entry = threads_[reading.sample.id.tid.value];
    entry.runs = reading.sample.context_switches;
    entry.last = reading.sample;
    // The process's name is its main thread's: a main thread read again (as one that execs
    // is, since it ran) brings a new name at once, not at the next full refresh.
    if (reading.sample.id.tid.value == pid_.value && !isExited(reading.sample)) {
      name_ = reading.sample.name;
    }
  }
  if (reused.empty() && reread.empty()) {
    close();
    return exitedDuringRead(pid_);
  }
  auto out = header();
  all_blocked_ =
      std::all_of(reread.begin(), reread.end(),
                  [](const TaskReading& r) { return r.sample.status == ObjectStatus::kBlocked; }) &&
      std::all_of(reused.begin(), reused.end(),
                  [](const ThreadSample& t) { return t.status == ObjectStatus::kBlocked; });
  // Both lists are in tid order already (the cache is ordered, so is the task listing).
  out.threads.reserve(reused.size() + reread.size());
  auto r = reread.begin();
  for (auto& sample : reused) {
    for (; r != reread.end() && r->sample.id < sample.id; ++r) {
      out.threads.push_back(std::move(r->sample));
    }
    out.threads.push_back(std::move(sample));
  }
  for (; r != reread.end(); ++r) out.threads.push_back(std::move(r->sample));
  return out;
}

std::size_t ThreadCache::openDescriptors() const {
  return static_cast<std::size_t>(std::count_if(
      threads_.begin(), threads_.end(), [](const auto& e) { return e.second.schedstat.valid(); }));
}

std::optional<SchedTimes> ThreadCache::times(std::int32_t tid, Entry& entry) {
  if (!entry.schedstat.valid()) {
    std::array<char, 32> path{};
    std::snprintf(path.data(), path.size(), "%d/schedstat", tid);
    entry.schedstat = BudgetedFd::openAt(budget_, task_fd_.get(), path.data());
    // Out of budget (or gone): a fresh descriptor for this one read.
    if (!entry.schedstat.valid()) return readSchedTimes(task_fd_.get(), tid);
  }
  return readSchedTimes(entry.schedstat.get());
}

void ThreadCache::clear() {
  threads_.clear();
  activity_.reset();
  all_blocked_ = false;
}

void ThreadCache::close() { task_fd_.reset(); }

ProcessSample ThreadCache::header() const {
  ProcessSample out;
  out.pid = pid_;
  out.name = name_;
  out.title = title_;
  out.start_time = start_time_;
  return out;
}

}  // namespace wctmon::linux_platform
