// How long a status read (counters and open incidents) takes while the monitor's side effects run:
// N processes deadlock at once, so the service captures each (ptrace) and commits each incident
// (SQLite, synchronous=FULL) while a reader asks the monitor for its status every 100 µs. Real
// platform, real store, real deadlocks. Also reports how long the captures and commits themselves
// took: what a status read would have waited for when they ran under the decision lock. Usage:
// wctmon-status-bench FIXTURE [PROCESSES]
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/monitor.h"
#include "platform/platform_factory.h"
#include "platform/service_factory.h"
#include "runtime/scheduler.h"
#include "runtime/worker_pool.h"
#include "store/incident_store.h"

namespace {

using SteadyClock = std::chrono::steady_clock;

double micros(SteadyClock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

/// Durations of what a decorated port did, in µs.
class Timings {
 public:
  void add(SteadyClock::duration d) {
    std::lock_guard lock(mutex_);
    values_.push_back(micros(d));
  }
  std::vector<double> sorted() {
    std::lock_guard lock(mutex_);
    auto v = values_;
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  std::mutex mutex_;
  std::vector<double> values_;
};

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

/// The store, timing each write.
class TimedRepository final : public wctmon::IncidentRepository {
 public:
  TimedRepository(wctmon::IncidentRepository& inner, Timings& timings)
      : inner_(inner), timings_(timings) {}
  wctmon::Result<std::int64_t> insert(const wctmon::Incident& i) override {
    const auto start = SteadyClock::now();
    auto r = inner_.insert(i);
    timings_.add(SteadyClock::now() - start);
    return r;
  }
  wctmon::Result<std::int64_t> lastId() override { return inner_.lastId(); }
  wctmon::Status update(const wctmon::Incident& i) override {
    const auto start = SteadyClock::now();
    auto r = inner_.update(i);
    timings_.add(SteadyClock::now() - start);
    return r;
  }
  wctmon::Result<wctmon::IncidentListing> list(const wctmon::IncidentQuery& q) override {
    return inner_.list(q);
  }
  wctmon::Result<std::optional<wctmon::Incident>> get(std::int64_t id) override {
    return inner_.get(id);
  }
  wctmon::Result<std::size_t> applyRetention(std::chrono::system_clock::time_point now,
                                             std::chrono::hours age, std::size_t count) override {
    return inner_.applyRetention(now, age, count);
  }
  wctmon::Result<std::string> ensureCurrent() override { return inner_.ensureCurrent(); }
  wctmon::Status keepIdsAbove(std::int64_t last_id) override {
    return inner_.keepIdsAbove(last_id);
  }
  wctmon::Status putTarget(const wctmon::TargetConfig& t) override { return inner_.putTarget(t); }
  wctmon::Result<bool> removeTarget(const std::string& name) override {
    return inner_.removeTarget(name);
  }
  wctmon::Result<std::vector<wctmon::TargetConfig>> targets(const wctmon::Config& c) override {
    return inner_.targets(c);
  }

 private:
  wctmon::IncidentRepository& inner_;
  Timings& timings_;
};

/// The inspector, timing each capture.
class TimedInspector final : public wctmon::ThreadInspector {
 public:
  TimedInspector(wctmon::ThreadInspector& inner, Timings& timings)
      : inner_(inner), timings_(timings) {}
  std::vector<wctmon::ThreadCapture> capture(std::span<const wctmon::ThreadRef> threads) override {
    const auto start = SteadyClock::now();
    auto r = inner_.capture(threads);
    timings_.add(SteadyClock::now() - start);
    return r;
  }

 private:
  wctmon::ThreadInspector& inner_;
  Timings& timings_;
};

pid_t spawnDeadlock(const char* fixture) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(fixture, fixture, "mutex-abba", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: wctmon-status-bench FIXTURE [PROCESSES]\n");
    return 2;
  }
  const int processes = argc > 2 ? std::atoi(argv[2]) : 20;
  if (std::getenv("QUIET")) spdlog::set_level(spdlog::level::off);
  char dir_template[] = "/tmp/wctmon-status-bench-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(dir_template);
  auto store = wctmon::IncidentStore::open(dir / "incidents.db");
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  Timings commits;
  Timings captures;
  Timings reads;
  Timings floor;
  TimedRepository repository(**store, commits);

  wctmon::WorkerPool pool(2);
  auto source = wctmon::makeWaitChainSource(pool.work());
  auto real_inspector = wctmon::makeThreadInspector();
  TimedInspector inspector(*real_inspector, captures);
  auto catalog = wctmon::makeProcessCatalog();
  wctmon::SystemClock clock;
  const std::string name = std::filesystem::path(argv[1]).filename().string().substr(0, 15);
  auto parsed = wctmon::parseConfig(R"({"sampling": {"interval_ms": 200},
      "capture": {"min_interval_ms": 0}, "targets": [{"exe": ")" +
                                    name + R"("}]})");
  if (!parsed) {
    std::fprintf(stderr, "%s\n", parsed.error().front().toString().c_str());
    return 1;
  }
  wctmon::TargetRegistry targets(&repository, *parsed);
  wctmon::IncidentEffects incidents({&repository, &inspector, nullptr, nullptr, clock, pool.work(),
                                     [&targets] { return targets.runtime(); }},
                                    parsed->alerts);
  wctmon::Monitor monitor({*source, *catalog, clock, targets, incidents}, *parsed);
  wctmon::Scheduler::Options options;
  options.discovery_interval = std::chrono::milliseconds(100);
  wctmon::Scheduler scheduler(monitor, pool, options);

  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) children.push_back(spawnDeadlock(argv[1]));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let them deadlock
  scheduler.start();

  // Status reads, noting those made while a capture or a commit was in flight.
  std::atomic<bool> stop{false};
  std::size_t during_effects = 0;
  std::thread reader([&] {
    // Real-time priority (root): what is measured is waiting for the monitor, not for a core
    // the side effects keep busy.
    sched_param param{};
    param.sched_priority = 10;
    const bool realtime = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param) == 0;
    if (!realtime) std::fprintf(stderr, "status reads at normal priority (not root)\n");
    while (!stop) {
      const auto start = SteadyClock::now();
      const auto stats = monitor.stats();
      const auto open = incidents.openIncidents();
      const auto elapsed = SteadyClock::now() - start;
      if (stats.pending_effects > 0) {
        reads.add(elapsed);
        ++during_effects;
        // The floor: the same two clock reads around nothing, in the same conditions (a
        // virtual CPU can be taken away from any thread for milliseconds).
        const auto floor_start = SteadyClock::now();
        floor.add(SteadyClock::now() - floor_start);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (SteadyClock::now() < deadline) {
    const auto s = monitor.stats();
    if (s.captures >= static_cast<std::uint64_t>(processes) && s.pending_effects == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  reader.join();
  scheduler.stop();
  for (const pid_t child : children) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  std::filesystem::remove_all(dir);

  const auto r = reads.sorted();
  const auto f = floor.sorted();
  const auto c = captures.sorted();
  const auto w = commits.sorted();
  std::printf("processes deadlocked          %d\n", processes);
  std::printf("captures                      %zu  p50 %.0f us  max %.0f us\n", c.size(),
              percentile(c, 0.5), percentile(c, 1.0));
  std::printf("store writes                  %zu  p50 %.0f us  max %.0f us\n", w.size(),
              percentile(w, 0.5), percentile(w, 1.0));
  std::printf("status reads during effects   %zu  p50 %.1f us  p99 %.1f us  max %.1f us\n",
              during_effects, percentile(r, 0.5), percentile(r, 0.99), percentile(r, 1.0));
  std::printf("  floor (no read)              %zu  p50 %.1f us  p99 %.1f us  max %.1f us\n",
              f.size(), percentile(f, 0.5), percentile(f, 0.99), percentile(f, 1.0));
  const auto over = std::count_if(r.begin(), r.end(), [](double us) { return us > 1000; });
  const auto floor_over = std::count_if(f.begin(), f.end(), [](double us) { return us > 1000; });
  std::printf("  reads over 1 ms               %ld (floor: %ld)\n", static_cast<long>(over),
              static_cast<long>(floor_over));
  return c.size() >= static_cast<std::size_t>(processes) ? 0 : 1;
}
