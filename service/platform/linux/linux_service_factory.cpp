#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdlib>

#include "platform/linux/hot_spot_sampler.h"
#include "platform/linux/journald_alert_sink.h"
#include "platform/linux/linux_process_catalog.h"
#include "platform/linux/local_prober.h"
#include "platform/linux/systemd_service_host.h"
#include "platform/service_factory.h"

namespace wctmon {

std::unique_ptr<ProcessCatalog> makeProcessCatalog() {
  return std::make_unique<linux_platform::LinuxProcessCatalog>();
}

std::unique_ptr<LocalProber> makeLocalProber() {
  return std::make_unique<linux_platform::LinuxLocalProber>();
}

std::unique_ptr<HotSpotSampler> makeHotSpotSampler() {
  return std::make_unique<linux_platform::PerfHotSpotSampler>();
}

// No SCM and no windows here: the service says once at start that services.* and
// detection.window_hung_ms have no effect.
std::unique_ptr<ServiceStatusSource> makeServiceStatusSource() { return nullptr; }

std::unique_ptr<WindowProber> makeWindowProber() { return nullptr; }

std::unique_ptr<SystemAlertSink> makeAlertSink() {
  return std::make_unique<linux_platform::SystemLogAlertSink>();
}

void prepareServiceProcess() {
  // What the service makes is its own unless it says otherwise (the socket, the reader token):
  // incidents, registers and stacks of other users' processes are in its files. Set here too, not
  // only by the unit's UMask=, for a service started by hand under a careless umask.
  ::umask(077);
  // Each worker that allocates gets an arena of its own (up to 8 per core), and what a large
  // incident leaves in each stays resident: with two, the service's peak during a 5,000-thread
  // ring was 161 MB (median of 3) where the default reached 233 (scripts/bench/ring.py). An
  // administrator's MALLOC_ARENA_MAX is left as it is.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) ::mallopt(M_ARENA_MAX, 2);
  // The sampler keeps a descriptor per watched thread open, within a budget taken from the
  // soft limit: raise it to the hard one.
  constexpr rlim_t kWanted = 65536;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  // Raising the hard limit needs CAP_SYS_RESOURCE, which the systemd unit does not grant (it
  // sets LimitNOFILE instead); by hand as root it works. Either way the soft limit follows.
  if (limit.rlim_max < kWanted) {
    rlimit raised{kWanted, kWanted};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  }
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

std::unique_ptr<ServiceHost> makeServiceHost() {
  return std::make_unique<linux_platform::SystemdServiceHost>();
}

std::optional<int> runUnderServiceManager(const ServiceLifecycle& /*lifecycle*/) {
  return std::nullopt;
}

namespace {
Error systemdSaysIt() {
  return makeError(ErrorCode::kInvalidArgument,
                   "this is for the Windows service; on Linux the systemd unit "
                   "(wctmon.service) carries the service's configuration");
}
}  // namespace

Result<std::vector<std::string>> configureServiceManager(
    const std::filesystem::path& /*state_dir*/) {
  return systemdSaysIt();
}

Status removeServiceManagerConfig(const std::filesystem::path& /*state_dir*/, bool /*purge*/) {
  return systemdSaysIt();
}

}  // namespace wctmon
