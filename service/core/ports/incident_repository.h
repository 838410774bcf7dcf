#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "model/incident.h"
#include "model/result.h"

namespace wctmon {

/// Which incidents to list.
struct IncidentQuery {
  std::optional<IncidentState> state;
  std::optional<ProcessIdentity> process;
  std::optional<IncidentKind> kind;
  /// Any process with this pid (whatever its start time).
  std::optional<Pid> pid;
  std::optional<std::string> target;
  /// Opened at or after this time.
  std::optional<Incident::TimePoint> since;
  /// Where the previous page ended: only incidents listed after this one (made before it: a
  /// lower id). Incidents opened since are never on later pages.
  struct Position {
    Incident::TimePoint opened_at;
    std::int64_t id = 0;
  };
  std::optional<Position> after;
  /// The most recently made first (by id, not by the wall clock's opening time), at most this
  /// many; 0 = all.
  std::size_t limit = 0;

  /// The incidents in `state` (any when unset) of `process` (any when unset), at most `limit`.
  [[nodiscard]] static IncidentQuery by(std::optional<IncidentState> state,
                                        std::optional<ProcessIdentity> process = {},
                                        std::size_t limit = 0) {
    IncidentQuery query;
    query.state = state;
    query.process = process;
    query.limit = limit;
    return query;
  }

  /// Whether `incident` is one this query lists (for repositories that filter in memory).
  [[nodiscard]] bool matches(const Incident& incident) const {
    return (!state || incident.state == *state) && (!process || incident.process == *process) &&
           (!kind || incident.kind == *kind) && (!pid || incident.process.pid == *pid) &&
           (!target || incident.target == *target) && (!since || incident.opened_at >= *since) &&
           (!after || incident.id < after->id);
  }
};

/// What a listing found: the incidents that match, and the stored ones that could not be read
/// back (a damaged record), which are left out but never silently.
struct IncidentListing {
  std::vector<Incident> incidents;
  /// The ids of the incidents left out, in the order of the listing.
  std::vector<std::int64_t> unreadable;
  /// Empty when every one was read; else one line for people that names where they are kept, how
  /// many could not be read, their ids and why.
  std::string warning;
};

/// Where incidents and runtime target registrations are kept across restarts: a SQLite file in
/// the service, memory in tests. A write either happens whole or fails with an error that says
/// what could not be written where. Thread-safe.
class IncidentRepository {
 public:
  virtual ~IncidentRepository() = default;

  /// Stores a new incident under its id, or under the next free id when its id is 0; returns
  /// the id. Fails when an incident with that id exists.
  [[nodiscard]] virtual Result<std::int64_t> insert(const Incident& incident) = 0;
  /// The highest id ever given (0 for none): ids are never reused, even after retention.
  [[nodiscard]] virtual Result<std::int64_t> lastId() = 0;
  /// Rewrites a stored incident (by id).
  [[nodiscard]] virtual Status update(const Incident& incident) = 0;
  /// The incidents that match `query`; an unreadable one is left out and reported, so that one
  /// damaged record hides no other.
  [[nodiscard]] virtual Result<IncidentListing> list(const IncidentQuery& query) = 0;
  /// The incident `id`, or none; a stored one that cannot be read is an error (kIo).
  [[nodiscard]] virtual Result<std::optional<Incident>> get(std::int64_t id) = 0;

  /// Deletes resolved incidents older than `max_age` and the oldest beyond `max_count`;
  /// returns how many went.
  [[nodiscard]] virtual Result<std::size_t> applyRetention(
      std::chrono::system_clock::time_point now, std::chrono::hours max_age,
      std::size_t max_count) = 0;

  /// Checks, before writes, that what is written is still the store at its place (a file deleted
  /// or replaced while the service runs is not); when it is not, makes a new, empty one there.
  /// Returns what happened ("FILE: it was deleted"), empty when nothing did: the caller then
  /// writes again what must be in it. An error when a new one cannot be made.
  [[nodiscard]] virtual Result<std::string> ensureCurrent() { return std::string(); }
  /// Makes lastId() at least `last_id`, so that a store made again (see ensureCurrent) never
  /// gives again an id the one that went had given.
  [[nodiscard]] virtual Status keepIdsAbove(std::int64_t last_id) = 0;

  /// Adds or replaces a runtime target registration.
  [[nodiscard]] virtual Status putTarget(const TargetConfig& target) = 0;
  /// Removes a runtime target registration; false when there was none by that name.
  [[nodiscard]] virtual Result<bool> removeTarget(const std::string& name) = 0;
  /// The runtime target registrations, completed with `defaults`.
  [[nodiscard]] virtual Result<std::vector<TargetConfig>> targets(const Config& defaults) = 0;
};

}  // namespace wctmon
