#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "api/proc_stat_text.h"
#include "api/process_figures.h"
#include "os/proc_stat.h"

namespace wctmon::api {

namespace {

std::optional<std::string> readText(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

Result<ProcessFigures> readProcessFigures() {
  const auto text = readText("/proc/self/stat");
  const auto stat = text ? parseSelfStat(*text) : std::nullopt;
  if (!stat) return Error{ErrorCode::kIo, "cannot read /proc/self/stat"};
  // The boot time does not change while the service runs; /proc/stat is long on a large machine.
  static const auto boot_time = [] {
    const auto proc_stat = readText("/proc/stat");
    return proc_stat ? parseBootTime(*proc_stat) : std::nullopt;
  }();
  if (!boot_time) return Error{ErrorCode::kIo, "cannot read the boot time of /proc/stat"};
  const auto ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));

  ProcessFigures f;
  f.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks;
  f.resident_bytes = stat->resident_pages * page;
  f.virtual_bytes = stat->virtual_bytes;
  f.start_time_seconds =
      static_cast<double>(*boot_time) + static_cast<double>(stat->start_ticks) / ticks;
  f.threads = stat->threads;
  // Counted as the Go client counts them: the entries of /proc/self/fd, the one that lists them
  // included.
  std::error_code error;
  std::uint64_t open = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++open;
  }
  if (!error) f.open_fds = open;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    f.max_fds = limit.rlim_cur;
  }
  return f;
}

}  // namespace wctmon::api
