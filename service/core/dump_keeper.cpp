#include "core/dump_keeper.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <system_error>

#include "core/dump_writing.h"
#include "model/calendar.h"

namespace wctmon {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
/// What a dump holds beside memory: headers, each thread's registers, the list of mapped files.
constexpr std::uint64_t kHeaderRoom = 4 * kMiB;
/// Less room than this for memory, and a dump would hold too little to open usefully.
constexpr std::uint64_t kLeastMemory = 1 * kMiB;

constexpr std::string_view kIncidentPrefix = "incident-";

/// The incident of a dump named "incident-ID-...".
std::optional<std::int64_t> incidentOfName(const std::string& name) {
  if (!name.starts_with(kIncidentPrefix)) return std::nullopt;
  std::int64_t id = 0;
  const char* begin = name.data() + kIncidentPrefix.size();
  const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), id);
  if (ec != std::errc() || end == begin || *end != '-') return std::nullopt;
  return id;
}

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + kMiB / 2) / kMiB) + " MiB"; }

}  // namespace

DumpKeeper::DumpKeeper(Dependencies deps, Config::Capture limits)
    : deps_(std::move(deps)), limits_(std::move(limits)) {}

void DumpKeeper::setLimits(const Config::Capture& limits) {
  MutexLock lock(mutex_);
  limits_ = limits;
}

std::vector<DumpKeeper::Entry> DumpKeeper::list() const {
  std::vector<Entry> out;
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator(deps_.dir, ec)) {
    const auto& path = item.path();
    if (path.extension() != std::filesystem::path(deps_.dumper.extension()) ||
        !item.is_regular_file(ec))
      continue;
    Entry e;
    e.path = path;
    e.bytes = item.file_size(ec);
    if (ec) continue;  // deleted meanwhile
    const auto sidecar = std::filesystem::file_size(sidecarOf(path), ec);
    if (!ec) e.bytes += sidecar;
    e.written = item.last_write_time(ec);
    e.incident = incidentOfName(path.filename().string());
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return a.written != b.written ? a.written < b.written : a.path < b.path;
  });
  return out;
}

void DumpKeeper::remove(const Entry& entry, std::string_view why) const {
  std::error_code ec;
  std::filesystem::remove(entry.path, ec);
  std::error_code ignored;
  std::filesystem::remove(sidecarOf(entry.path), ignored);
  if (ec) {
    spdlog::warn("cannot delete the dump {}: {}", entry.path.string(), ec.message());
  } else {
    spdlog::info("deleted the dump {} ({}): {}", entry.path.string(), mib(entry.bytes), why);
  }
}

Result<std::uint64_t> DumpKeeper::makeRoom(const std::set<std::int64_t>& open) {
  const std::uint64_t total = limits_.dumps_max_total_mb * kMiB;
  const std::uint64_t wanted = std::min(limits_.dump_max_mb * kMiB + kHeaderRoom, total);
  auto entries = list();
  std::uint64_t used = 0;
  for (const auto& e : entries) used += e.bytes;
  for (const auto& e : entries) {
    if (used + wanted <= total) break;
    if (e.incident && open.contains(*e.incident)) continue;
    remove(e, "room for a newer dump (capture.dumps_max_total_mb)");
    used -= std::min(used, e.bytes);
  }
  const std::uint64_t room = total > used ? total - used : 0;
  if (room < kHeaderRoom + kLeastMemory) {
    return makeError(ErrorCode::kIo,
                     "the dumps in " + deps_.dir.string() + " take " + mib(used) + " of the " +
                         mib(total) +
                         " capture.dumps_max_total_mb allows, and those left are of open "
                         "incidents");
  }
  return std::min(limits_.dump_max_mb * kMiB, room - kHeaderRoom);
}

Result<DumpRecord> DumpKeeper::write(Pid pid, const std::string& name, std::string diagnosis,
                                     const std::set<std::int64_t>& open) {
  std::error_code ec;
  std::filesystem::create_directories(deps_.dir, ec);
  if (ec) {
    return makeError(ErrorCode::kIo, "cannot make the dumps' directory " + deps_.dir.string() +
                                         ": " + ec.message());
  }
  // Only the service's account reads dumps: they hold all of a process's secrets.
  std::filesystem::permissions(deps_.dir, std::filesystem::perms::owner_all, ec);
  // A dump cut short by the service's end (a kill) is left as NAME.partial: never a dump, and
  // none is being written now (one at a time, one service per state directory).
  for (const auto& item : std::filesystem::directory_iterator(deps_.dir, ec)) {
    if (item.path().extension() != ".partial") continue;
    std::error_code ignored;
    std::filesystem::remove(item.path(), ignored);
    spdlog::info("deleted {}, a dump cut short", item.path().string());
  }
  auto room = makeRoom(open);
  if (!room) return room.error();
  auto path = deps_.dir / (name + std::string(deps_.dumper.extension()));
  for (int n = 2; std::filesystem::exists(path, ec); ++n) {
    path = deps_.dir / (name + "-" + std::to_string(n) + std::string(deps_.dumper.extension()));
  }
  DumpRequest request{path, *room, limits_.dump_full_memory, std::move(diagnosis)};
  return writeDump(deps_.dumper, pid, request);
}

DumpRecord DumpKeeper::dumpIncident(const Incident& incident, const std::set<std::int64_t>& open) {
  MutexLock lock(mutex_);
  const auto name = std::string(kIncidentPrefix) + std::to_string(incident.id) + "-pid-" +
                    std::to_string(incident.process.pid.value) + "-" + utcStamp(deps_.clock.now());
  auto written = write(incident.process.pid, name, deps_.diagnosis(incident), open);
  if (written) return std::move(written).value();
  spdlog::warn("no dump of pid {} for incident {}: {}", incident.process.pid.value, incident.id,
               written.error().message);
  return DumpRecord{.error = written.error().message};
}

Result<DumpRecord> DumpKeeper::dumpProcess(Pid pid, std::string diagnosis,
                                           const std::set<std::int64_t>& open) {
  MutexLock lock(mutex_);
  const auto name = "pid-" + std::to_string(pid.value) + "-" + utcStamp(deps_.clock.now());
  return write(pid, name, std::move(diagnosis), open);
}

std::size_t DumpKeeper::applyRetention(const std::function<bool(std::int64_t)>& kept,
                                       std::chrono::hours max_age) {
  MutexLock lock(mutex_);
  std::size_t removed = 0;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (const auto& e : list()) {
    if (e.incident ? kept(*e.incident) : now - e.written < max_age) continue;
    remove(e, e.incident ? "its incident was deleted by retention" : "older than retention");
    ++removed;
  }
  return removed;
}

}  // namespace wctmon
