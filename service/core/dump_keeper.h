#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/ports/clock.h"
#include "core/ports/process_dumper.h"
#include "model/incident.h"
#include "model/mutex.h"
#include "model/result.h"

namespace wctmon {

/// The dumps the service takes, in one directory (state_dir/dumps), each with its diagnosis
/// beside it: named after what they were taken for ("incident-ID-pid-PID-TIME.core",
/// "pid-PID-TIME.core"), held within the configured total (the oldest deleted first to make
/// room, never the dump of an open incident) and deleted with their incident by retention. A
/// dump that cannot be written is a record that says why, never an exception. Thread-safe; one
/// dump is written at a time.
class DumpKeeper {
 public:
  struct Dependencies {
    ProcessDumper& dumper;
    /// Where the dumps are kept (made when the first is written, readable by its owner only).
    std::filesystem::path dir;
    const Clock& clock;
    /// The diagnosis an incident's dump carries: the incident, as the API gives it (JSON).
    std::function<std::string(const Incident&)> diagnosis;
  };

  DumpKeeper(Dependencies deps, Config::Capture limits);
  DumpKeeper(const DumpKeeper&) = delete;
  DumpKeeper& operator=(const DumpKeeper&) = delete;

  void setLimits(const Config::Capture& limits) WCTMON_EXCLUDES(mutex_);
  [[nodiscard]] const std::filesystem::path& directory() const { return deps_.dir; }

  /// A dump of the process of `incident`, the incident inside; `open` lists the ids of the open
  /// incidents, whose dumps are never deleted to make room.
  [[nodiscard]] DumpRecord dumpIncident(const Incident& incident,
                                        const std::set<std::int64_t>& open) WCTMON_EXCLUDES(mutex_);
  /// A dump of `pid` asked for now, `diagnosis` inside.
  [[nodiscard]] Result<DumpRecord> dumpProcess(Pid pid, std::string diagnosis,
                                               const std::set<std::int64_t>& open)
      WCTMON_EXCLUDES(mutex_);

  /// Deletes the dumps of incidents no longer kept (`kept` says false), and the dumps asked for
  /// on demand older than `max_age`; returns how many went.
  std::size_t applyRetention(const std::function<bool(std::int64_t)>& kept,
                             std::chrono::hours max_age) WCTMON_EXCLUDES(mutex_);

  /// One dump in the directory.
  struct Entry {
    std::filesystem::path path;
    /// The dump and its diagnosis file.
    std::uint64_t bytes = 0;
    std::filesystem::file_time_type written;
    /// The incident it was taken for; none for one asked for on demand.
    std::optional<std::int64_t> incident;
  };
  /// The dumps in the directory, oldest first.
  [[nodiscard]] std::vector<Entry> list() const;

 private:
  /// Deletes the oldest dumps not of `open` until one more dump fits; the most memory that dump
  /// may hold, or why none fits.
  Result<std::uint64_t> makeRoom(const std::set<std::int64_t>& open) WCTMON_REQUIRES(mutex_);
  Result<DumpRecord> write(Pid pid, const std::string& name, std::string diagnosis,
                           const std::set<std::int64_t>& open) WCTMON_REQUIRES(mutex_);
  void remove(const Entry& entry, std::string_view why) const;

  const Dependencies deps_;
  Mutex mutex_;  // held while a dump is written: one at a time, and the directory with it
  Config::Capture limits_ WCTMON_GUARDED_BY(mutex_);
};

}  // namespace wctmon
