#include "platform/linux/process_reader.h"

#include <fcntl.h>

#include <array>
#include <vector>

#include "os/unique_fd.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/wait_classifier.h"

namespace wctmon::linux_platform {
namespace {

/// A thread that exited between the listing and its read is simply no longer there.
void dropExited(std::vector<TaskReading>& threads) {
  std::erase_if(threads, [](const TaskReading& t) { return isExited(t.sample); });
}

/// A kernel thread runs only in the kernel: its syscall file says nothing (all zeros), so it is
/// named for what it is, with its wait channel, instead of a made-up system call.
void markKernelThreads(std::vector<TaskReading>& threads, int task_fd) {
  for (auto& thread : threads) {
    if (isExited(thread.sample) || thread.sample.state == RunState::kRunning) continue;
    thread.syscall.reset();
    thread.sample.status = ObjectStatus::kBlocked;
    thread.sample.wait = kernelThreadWait(readWchan(task_fd, thread.sample.id.tid.value));
  }
}

}  // namespace

bool ProcessReader::isKernelThread(Pid pid) {
  auto proc_fd = openProcessDirectory(pid);
  if (!proc_fd) return false;
  auto header = readProcessHeader(proc_fd->get(), pid);
  return header.ok() && isKernelThreadFlags(header->flags);
}

void ProcessReader::classify(Pid pid, std::uint64_t start_time, int task_fd, TaskList& tasks,
                             std::span<TaskReading> threads) {
  ProcWaitLookup lookup(context_, pid, task_fd, tasks, start_time);
  classifyWaits(pid, threads, lookup);
}

Result<ProcessSample> ProcessReader::read(Pid pid, std::span<const Tid> only) {
  auto proc_fd = openProcessDirectory(pid);
  if (!proc_fd) return proc_fd.error();
  auto header = readProcessHeader(proc_fd->get(), pid);
  if (!header) return header.error();
  UniqueFd task_fd(::openat(proc_fd->get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return noSuchProcess(pid);
  if (header->state == RunState::kZombie && zombieHasExited(task_fd.get())) {
    return zombieProcess(pid, header->name, header->ppid);
  }
  TaskList tasks(task_fd.get());

  std::vector<TaskReading> threads;
  if (!only.empty()) {
    for (const auto tid : only) threads.push_back(readTask(task_fd.get(), pid, tid.value));
  } else {
    threads.reserve(tasks.all().size());
    for (const auto tid : tasks.all()) threads.push_back(readTask(task_fd.get(), pid, tid));
    dropExited(threads);
  }
  if (isKernelThreadFlags(header->flags)) {
    markKernelThreads(threads, task_fd.get());
  } else {
    classify(pid, header->start_time, task_fd.get(), tasks, threads);
  }
  // Only a thread waiting on an owner can be part of a cycle and need the run count that
  // confirms one; reading it for every idle thread would add a third of the cost of a sample.
  for (auto& thread : threads) {
    const auto& w = thread.sample.wait;
    if (!only.empty() || (w && w->status == ObjectStatus::kOwned)) {
      thread.sample.context_switches = readRunCount(task_fd.get(), thread.sample.id.tid.value);
    }
  }

  // The pid may have been reused while we read: the start time tells.
  auto after = readProcessHeader(proc_fd->get(), pid);
  if (!after || after->start_time != header->start_time) return exitedDuringRead(pid);
  ProcessSample out;
  out.pid = pid;
  out.name = std::move(header->name);
  out.start_time = header->start_time;
  std::array<char, 4096> cmdline{};
  const long n = readSmallFile(proc_fd->get(), "cmdline", cmdline);
  if (n > 0)
    out.title = processTitle(std::string_view(cmdline.data(), static_cast<std::size_t>(n)));
  out.threads.reserve(threads.size());
  for (auto& thread : threads) out.threads.push_back(std::move(thread.sample));
  return out;
}

Result<ProcessSample> ProcessReader::readCached(Pid pid, ThreadCache& cache,
                                                TaskstatsClient* taskstats) {
  auto task_fd = cache.begin(pid);
  if (!task_fd) return task_fd.error();
  // Activity is read before any thread, like the run counts of the sweep: if a thread runs
  // after it, the next sample sees it move.
  const auto activity =
      taskstats != nullptr ? taskstats->activity(pid) : std::optional<ProcessActivity>();
  if (auto same = cache.unchanged(activity)) return std::move(*same);

  TaskList tasks(*task_fd);
  auto sweep = cache.sweep(tasks);
  std::vector<TaskReading> reread;
  reread.reserve(sweep.stale.size());
  for (const auto& stale : sweep.stale) {
    auto reading = readTask(*task_fd, pid, stale.tid);
    reading.sample.context_switches = stale.runs;
    reading.sample.cpu_time = stale.cpu_time;
    reading.sample.queued_time = stale.queued_time;
    reread.push_back(std::move(reading));
  }
  dropExited(reread);
  classify(pid, cache.startTime(), *task_fd, tasks, reread);
  return cache.complete(std::move(sweep.reused), reread);
}

}  // namespace wctmon::linux_platform
