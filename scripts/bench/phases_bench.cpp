// In-process cost of each phase of an analysis of a live process, next to the bare /proc floor
// read in the same process: where the time of `wctmon analyze` goes; and the high-water mark of
// the heap in each stage of the service's handling of one sample (every C++ allocation of this
// program is counted): the sample, its chains and cycles, its incidents, their JSON.
// Usage: wctmon-phases-bench PID [ROUNDS]
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/analyzer.h"
#include "core/incident_ids.h"
#include "core/incident_tracker.h"
#include "core/ports/clock.h"
#include "core/run_loop.h"
#include "core/wait_graph.h"
#include "platform/linux/code_map.h"
#include "platform/linux/linux_wait_chain_source.h"
#include "platform/linux/process_reader.h"
#include "wire/json_writer.h"

namespace heap {

/// The bytes of C++ allocations live now, and the most there were since the last reset.
std::atomic<std::size_t> live{0};
std::atomic<std::size_t> peak{0};

void allocated(std::size_t bytes) {
  const auto now = live += bytes;
  auto was = peak.load();
  while (now > was && !peak.compare_exchange_weak(was, now)) {
  }
}

/// How far the heap rose above where it stood while `body` ran (what it keeps included).
std::size_t highWater(const std::function<void()>& body) {
  const auto base = live.load();
  peak = base;
  body();
  return peak.load() - base;
}

}  // namespace heap

void* operator new(std::size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  heap::allocated(::malloc_usable_size(p));
  return p;
}
void* operator new[](std::size_t bytes) { return operator new(bytes); }
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  heap::live -= ::malloc_usable_size(p);
  std::free(p);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }

namespace {

using Clock = std::chrono::steady_clock;

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

double medianMicros(int rounds, const std::function<void()>& body) {
  std::vector<double> samples;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    body();
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

void floorRead(int pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(task.c_str());
  if (dir == nullptr) return;
  char buf[1024];
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    for (const char* file : {"stat", "syscall"}) {
      const std::string path = task + "/" + e->d_name + "/" + file;
      const int fd = ::open(path.c_str(), O_RDONLY);
      if (fd < 0) continue;
      (void)!::read(fd, buf, sizeof(buf));
      ::close(fd);
    }
  }
  ::closedir(dir);
}

/// The full re-read the steady-state sweep is compared with: stat + syscall of every thread
/// through descriptors opened once and kept, read with pread.
class KeptOpenFullRead {
 public:
  explicit KeptOpenFullRead(int pid, std::vector<const char*> files = {"stat", "syscall"}) {
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = ::opendir(task.c_str());
    if (dir == nullptr) return;
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      for (const char* file : files) {
        const std::string path = task + "/" + e->d_name + "/" + file;
        const int fd = ::open(path.c_str(), O_RDONLY);
        if (fd >= 0) fds_.push_back(fd);
      }
    }
    ::closedir(dir);
  }
  ~KeptOpenFullRead() {
    for (int fd : fds_) ::close(fd);
  }
  void read() const {
    char buf[1024];
    for (int fd : fds_) (void)!::pread(fd, buf, sizeof(buf), 0);
  }

 private:
  std::vector<int> fds_;
};

}  // namespace

int main(int argc, char** argv) {
  const int pid = argc >= 2 ? std::atoi(argv[1]) : 0;
  if (pid <= 0) {
    std::fprintf(stderr, "usage: wctmon-phases-bench PID [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 21;
  // Everything through the same asynchronous path as `wctmon analyze`, on this thread's loop.
  wctmon::RunLoop loop;
  wctmon::linux_platform::LinuxWaitChainSource source(loop.executor());
  const auto sampleWith = [&](wctmon::WaitChainSession& session) {
    std::optional<wctmon::Result<wctmon::Snapshot>> out;
    session.asyncSample({}, loop.executor(),
                        [&out](wctmon::Result<wctmon::Snapshot> s) { out.emplace(std::move(s)); });
    loop.run();
    return std::move(out).value();
  };
  const auto sampleFresh = [&] { return sampleWith(*source.open(wctmon::Pid{pid}).value()); };
  // The first read of the process's code reads its modules' symbols; later ones find them kept.
  const auto code_start = Clock::now();
  (void)wctmon::linux_platform::CodeMap::read(wctmon::Pid{pid}).hasRefiners();
  const double code_first =
      std::chrono::duration<double, std::micro>(Clock::now() - code_start).count();
  const double code_kept = medianMicros(
      rounds, [&] { (void)wctmon::linux_platform::CodeMap::read(wctmon::Pid{pid}).hasRefiners(); });
  auto snapshot = sampleFresh();
  if (!snapshot) {
    std::fprintf(stderr, "%s\n", snapshot.error().message.c_str());
    return 1;
  }
  const std::vector<wctmon::Pid> roots{wctmon::Pid{pid}};
  const auto threads = snapshot->processes.front().threads.size();
  wctmon::AnalysisResult result;

  const double floor = medianMicros(rounds, [&] { floorRead(pid); });
  const double sample = medianMicros(rounds, [&] { (void)sampleFresh(); });
  const double graph = medianMicros(rounds, [&] {
    auto g = wctmon::analyzeWaitGraph(*snapshot, roots, {});
    result.chains = std::move(g.chains);
    result.deadlocks = std::move(g.deadlocks);
  });
  const double json = medianMicros(rounds, [&] { (void)wctmon::wire::analysisToJson(result); });
  wctmon::WaitChainAnalyzer analyzer(nullptr);
  const double whole = medianMicros(rounds, [&] {
    (void)wctmon::analyzeNow(loop, analyzer, source.open(wctmon::Pid{pid}).value(), {});
  });

  // Closed before the sweeps: at 10,000 threads their descriptors alone would take the whole
  // descriptor limit from the caches measured next.
  double kept_full = 0;
  double kept_schedstat = 0;
  {
    KeptOpenFullRead kept(pid);
    kept_full = medianMicros(rounds, [&] { kept.read(); });
  }
  {
    KeptOpenFullRead schedstat(pid, {"schedstat"});
    kept_schedstat = medianMicros(rounds, [&] { schedstat.read(); });
  }
  // A session keeps its process's thread cache from one sample to the next (the service).
  auto session = std::move(source.open(wctmon::Pid{pid})).value();
  (void)sampleWith(*session);
  // Only steady-state sweeps (not the full refresh every tenth) are timed here.
  std::vector<double> sweeps;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    (void)sampleWith(*session);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if ((i + 2) % wctmon::linux_platform::ThreadCache::kFullRefreshEvery != 0) sweeps.push_back(us);
  }
  std::sort(sweeps.begin(), sweeps.end());
  const double sweep = sweeps[sweeps.size() / 2];
  // The same without taskstats: every thread's run count is read (what a process some of whose
  // threads ran costs).
  wctmon::linux_platform::ThreadCache per_thread_cache;
  wctmon::linux_platform::SampleContext context;
  wctmon::linux_platform::ProcessReader reader(context);
  (void)reader.readCached(wctmon::Pid{pid}, per_thread_cache);
  std::vector<double> per_thread;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    (void)reader.readCached(wctmon::Pid{pid}, per_thread_cache);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if ((i + 2) % wctmon::linux_platform::ThreadCache::kOwnersRefreshEvery != 0) {
      per_thread.push_back(us);
    }
  }
  std::sort(per_thread.begin(), per_thread.end());
  const double per_thread_sweep = per_thread[per_thread.size() / 2];

  // The heap's high-water mark of each stage of one sample's handling, as the service goes.
  std::optional<wctmon::Result<wctmon::Snapshot>> kept_sample;
  const auto sample_heap = heap::highWater([&] { kept_sample.emplace(sampleFresh()); });
  wctmon::GraphAnalysis kept_graph;
  const auto graph_heap = heap::highWater(
      [&] { kept_graph = wctmon::analyzeWaitGraph(kept_sample->value(), roots, {}); });
  wctmon::SystemClock clock;
  wctmon::IncidentIds ids;
  wctmon::IncidentTracker tracker(clock, ids);
  std::vector<wctmon::IncidentEvent> events;
  const auto incident_heap = heap::highWater([&] {
    wctmon::ProcessObservation o;
    o.process = wctmon::ProcessIdentity{wctmon::Pid{pid},
                                        kept_sample->value().processes.front().start_time};
    o.process_name = kept_sample->value().processes.front().name;
    o.target = std::make_shared<wctmon::TargetConfig>();
    o.threads = kept_sample->value().processes.front().threads;
    o.deadlocks = kept_graph.deadlocks;
    o.chains = kept_graph.chains;
    events = tracker.observe(o);
  });
  std::size_t incident_json_bytes = 0;
  const auto incident_json_heap = heap::highWater([&] {
    for (const auto& e : events)
      incident_json_bytes += wctmon::wire::incidentToJson(e.incident).size();
  });
  const auto analysis_json_heap =
      heap::highWater([&] { (void)wctmon::wire::analysisToJson(result); });

  std::printf("threads                 %zu\n", threads);
  std::printf("/proc floor (stat+syscall) %9.0f us  %6.2f us/thread\n", floor, floor / threads);
  std::printf("code map, first read       %9.0f us  (module symbols read)\n", code_first);
  std::printf("code map, modules kept     %9.0f us\n", code_kept);
  std::printf("sample (read + resolve)    %9.0f us  %6.2f us/thread\n", sample, sample / threads);
  std::printf("wait graph + chains        %9.0f us  %6.2f us/thread\n", graph, graph / threads);
  std::printf("JSON                       %9.0f us  %6.2f us/thread\n", json, json / threads);
  std::printf("analyze (with confirm)     %9.0f us  %6.2f us/thread\n", whole, whole / threads);
  std::printf("full re-read, kept open    %9.0f us  %6.2f us/thread\n", kept_full,
              kept_full / threads);
  std::printf("schedstat alone, kept open %9.0f us  %6.2f us/thread\n", kept_schedstat,
              kept_schedstat / threads);
  std::printf("sweep, idle process        %9.0f us  %6.2f us/thread  (%.2fx the full re-read)\n",
              sweep, sweep / threads, sweep / kept_full);
  std::printf("sweep, per-thread counts   %9.0f us  %6.2f us/thread  (%.2fx the full re-read)\n",
              per_thread_sweep, per_thread_sweep / threads, per_thread_sweep / kept_full);
  std::printf("heap high-water: sample       %8.1f MiB\n", mib(sample_heap));
  std::printf("heap high-water: wait graph   %8.1f MiB  (%zu chains, %zu cycles)\n",
              mib(graph_heap), kept_graph.chains.size(), kept_graph.deadlocks.size());
  std::printf("heap high-water: incidents    %8.1f MiB  (%zu events)\n", mib(incident_heap),
              events.size());
  std::printf("heap high-water: incident JSON %7.1f MiB  (%.1f MiB of text)\n",
              mib(incident_json_heap), mib(incident_json_bytes));
  std::printf("heap high-water: analysis JSON %7.1f MiB\n", mib(analysis_json_heap));
  return 0;
}
