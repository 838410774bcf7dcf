#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>

#include "core/ports/incident_repository.h"
#include "model/incident.h"
#include "model/result.h"

namespace wctmon {

/// The incident writes the store has not taken yet (a full disk, a file being made again), in
/// the order they were decided, at most one per incident: a newer state of an incident replaces
/// the one queued, in its place, so that an outage of any length costs one entry per incident.
/// Written in order when the store takes writes again; every write is of a whole record under its
/// own id, so a write that is done twice (an insert that reached the disk before it failed) is
/// never a second row. Not thread-safe: the incident effects use it one at a time.
class PendingWrites {
 public:
  /// At most `capacity` incidents wait (at least 1).
  explicit PendingWrites(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// Queues the latest state of `incident` (by id), first stored with an insert when `is_new`.
  /// When the queue is full, makes room by dropping the oldest queued resolved incident (its
  /// alert was sent; only its record is lost), else the oldest of all; returns the id dropped.
  std::optional<std::int64_t> push(const Incident& incident, bool is_new);

  /// Writes the queued incidents in order until one fails on the disk or the file (kIo); returns
  /// that failure (the failed one and those after it stay queued), or success when the queue is
  /// empty. A write the store refuses for another reason would be refused again: it is handed to
  /// `refused` and dropped, so that it never holds back the others.
  [[nodiscard]] Status flush(IncidentRepository& store,
                             const std::function<void(const Error&)>& refused);

  [[nodiscard]] bool empty() const { return order_.empty(); }
  [[nodiscard]] std::size_t size() const { return order_.size(); }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  /// Incidents dropped to make room, since the queue was made.
  [[nodiscard]] std::uint64_t dropped() const { return dropped_; }

 private:
  struct Entry {
    Incident incident;
    bool is_new = false;
  };
  /// Writes one incident whole: an insert, or an update, falling back to the other when its row
  /// is (not) there already.
  [[nodiscard]] static Status write(IncidentRepository& store, const Entry& entry);

  std::size_t capacity_;
  std::list<Entry> order_;
  std::map<std::int64_t, std::list<Entry>::iterator> by_id_;
  std::uint64_t dropped_ = 0;
};

}  // namespace wctmon
