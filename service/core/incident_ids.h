#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace wctmon {

/// Where incident ids come from: each new incident gets the next one above every id given or
/// known (the store's highest, incidents adopted at a start), so that an id is never given
/// twice. Thread-safe.
class IncidentIds {
 public:
  explicit IncidentIds(std::int64_t last = 0) : last_(last) {}

  /// The id of a new incident.
  [[nodiscard]] std::int64_t next() { return ++last_; }
  /// Keeps the ids given from now on above `id`.
  void keepAbove(std::int64_t id) {
    auto last = last_.load();
    while (last < id && !last_.compare_exchange_weak(last, id)) {
    }
  }
  /// The highest id given or known.
  [[nodiscard]] std::int64_t last() const { return last_.load(); }

 private:
  std::atomic<std::int64_t> last_;
};

}  // namespace wctmon
