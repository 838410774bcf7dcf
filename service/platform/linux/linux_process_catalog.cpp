#include "platform/linux/linux_process_catalog.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>
#include <vector>

#include "os/proc_stat.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

constexpr std::uint32_t kPfKthread = 0x00200000;

/// Whether process `pid`, of stat `stat`, has exited: a zombie whose main thread alone is left.
/// One whose main thread ended while its other threads run is alive.
bool hasExited(const StatFields& stat, std::int32_t pid) {
  if (stat.state != RunState::kZombie) return false;
  const UniqueFd task(::open(("/proc/" + std::to_string(pid) + "/task").c_str(),
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return !task.valid() || zombieHasExited(task.get());
}

}  // namespace

LinuxProcessCatalog::LinuxProcessCatalog() {
  // /proc/stat grows with the CPUs and interrupts (btime comes after them): read it whole.
  std::ifstream in("/proc/stat");
  std::ostringstream text;
  text << in.rdbuf();
  boot_time_ = parseBootTime(text.str());
  if (const long hz = ::sysconf(_SC_CLK_TCK); hz > 0) ticks_per_second_ = hz;
}

std::optional<ProcessInfo> LinuxProcessCatalog::get(Pid pid, bool with_cmdline) {
  const std::string dir = "/proc/" + std::to_string(pid.value);
  std::array<char, 1024> buf{};
  const long n = readSmallFile(AT_FDCWD, (dir + "/stat").c_str(), buf);
  if (n <= 0) return std::nullopt;
  auto stat = parseStat(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  // A zombie has exited: nothing of it runs or waits (its parent has yet to collect it).
  if (!stat || (stat->flags & kPfKthread) != 0 || hasExited(*stat, pid.value)) {
    return std::nullopt;
  }
  ProcessInfo info;
  info.identity = ProcessIdentity{pid, stat->start_time};
  info.comm = stat->comm;
  if (boot_time_) {
    info.started_at = std::chrono::system_clock::time_point(
        std::chrono::seconds(*boot_time_) +
        std::chrono::milliseconds(static_cast<std::int64_t>(stat->start_time) * 1000 /
                                  ticks_per_second_));
  }
  // A process whose main thread has ended shows its program and command line through another.
  const std::string files =
      stat->state == RunState::kZombie ? "/proc/" + std::to_string(liveTaskOf(pid).value) : dir;
  std::array<char, 4096> exe{};
  const ssize_t len = ::readlink((files + "/exe").c_str(), exe.data(), exe.size() - 1);
  if (len > 0) {
    std::string_view path(exe.data(), static_cast<std::size_t>(len));
    if (path.ends_with(" (deleted)")) path.remove_suffix(10);
    info.exe_name = std::string(path.substr(path.rfind('/') + 1));
  }
  if (with_cmdline) {
    std::vector<char> args(64 * 1024);
    const long m = readSmallFile(AT_FDCWD, (files + "/cmdline").c_str(), args);
    if (m > 0) {
      info.cmdline.assign(args.data(), static_cast<std::size_t>(m));
      while (!info.cmdline.empty() && info.cmdline.back() == '\0') info.cmdline.pop_back();
      for (auto& c : info.cmdline) {
        if (c == '\0') c = ' ';
      }
    }
  }
  return info;
}

std::vector<ProcessInfo> LinuxProcessCatalog::list(bool with_cmdline) {
  std::lock_guard lock(mutex_);
  std::vector<ProcessInfo> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  std::vector<Pid> pids;
  while (const dirent* entry = ::readdir(dir)) {
    if (auto pid = parseInt(entry->d_name)) pids.push_back(Pid{static_cast<std::int32_t>(*pid)});
  }
  ::closedir(dir);
  const bool refresh = listings_++ % kRefreshEvery == 0;
  std::unordered_map<std::int32_t, ProcessInfo> seen;
  for (const auto pid : pids) {
    auto it = known_.find(pid.value);
    if (!refresh && it != known_.end() && (!with_cmdline || !it->second.cmdline.empty())) {
      std::array<char, 1024> buf{};
      const long n =
          readSmallFile(AT_FDCWD, ("/proc/" + std::to_string(pid.value) + "/stat").c_str(), buf);
      auto stat = n > 0 ? parseStat(std::string_view(buf.data(), static_cast<std::size_t>(n)))
                        : std::nullopt;
      // exec keeps the pid and the start time but sets a new comm: a process whose comm
      // changed is read again (executable, command line), which costs nothing more than the
      // stat already read. An exec that keeps the comm is caught by the periodic refresh.
      if (stat && hasExited(*stat, pid.value)) continue;
      if (stat && stat->start_time == it->second.identity.start_time &&
          stat->comm == it->second.comm) {
        out.push_back(it->second);
        seen.emplace(pid.value, it->second);
        continue;
      }
    }
    if (auto info = get(pid, with_cmdline)) {
      out.push_back(*info);
      seen.emplace(pid.value, std::move(*info));
    }
  }
  known_ = std::move(seen);
  return out;
}

}  // namespace wctmon::linux_platform
