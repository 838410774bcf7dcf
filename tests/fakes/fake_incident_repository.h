#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/ports/incident_repository.h"

namespace wctmon::testing {

/// Incidents and targets in memory, listed in the order the SQLite store lists them. A test can
/// make every write fail, as a full disk would, and a stored incident unreadable, as a damaged
/// record is.
class FakeIncidentRepository final : public IncidentRepository {
 public:
  Result<std::int64_t> insert(const Incident& incident) override {
    std::lock_guard lock(mutex_);
    if (fail_writes_) return writeError();
    Incident stored = incident;
    if (stored.id == 0) stored.id = last_id_ + 1;
    if (incidents_.contains(stored.id)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "incident " + std::to_string(stored.id) + " exists");
    }
    last_id_ = std::max(last_id_, stored.id);
    incidents_[stored.id] = stored;
    writes_.push_back(stored.id);
    return stored.id;
  }

  Result<std::int64_t> lastId() override {
    std::lock_guard lock(mutex_);
    return last_id_;
  }

  Status update(const Incident& incident) override {
    std::lock_guard lock(mutex_);
    if (fail_writes_) return writeError();
    auto it = incidents_.find(incident.id);
    if (it == incidents_.end()) {
      return makeError(ErrorCode::kInvalidArgument, "no incident " + std::to_string(incident.id));
    }
    it->second = incident;
    writes_.push_back(incident.id);
    unreadable_.erase(incident.id);  // rewritten whole
    return std::monostate{};
  }

  Result<IncidentListing> list(const IncidentQuery& query) override {
    std::lock_guard lock(mutex_);
    std::vector<Incident> matching;
    for (const auto& [id, i] : incidents_) {
      if (query.matches(i)) matching.push_back(i);
    }
    std::sort(matching.begin(), matching.end(),
              [](const Incident& a, const Incident& b) { return a.id > b.id; });
    if (query.limit > 0 && matching.size() > query.limit) matching.resize(query.limit);
    IncidentListing out;
    for (auto& i : matching) {
      if (unreadable_.contains(i.id)) {
        out.unreadable.push_back(i.id);
      } else {
        out.incidents.push_back(std::move(i));
      }
    }
    if (!out.unreadable.empty()) {
      out.warning = "incidents.db: " + std::to_string(out.unreadable.size()) +
                    " stored incident(s) cannot be read and are left out";
    }
    return out;
  }

  Result<std::optional<Incident>> get(std::int64_t id) override {
    std::lock_guard lock(mutex_);
    if (unreadable_.contains(id)) {
      return makeError(ErrorCode::kIo,
                       "incidents.db: incident " + std::to_string(id) + " cannot be read");
    }
    auto it = incidents_.find(id);
    if (it == incidents_.end()) return std::optional<Incident>{};
    return std::optional<Incident>{it->second};
  }

  Result<std::size_t> applyRetention(std::chrono::system_clock::time_point now,
                                     std::chrono::hours max_age, std::size_t max_count) override {
    std::lock_guard lock(mutex_);
    if (fail_writes_) return writeError();
    std::size_t removed = std::erase_if(incidents_, [&](const auto& entry) {
      const auto& i = entry.second;
      return i.state == IncidentState::kResolved && i.resolved_at && *i.resolved_at < now - max_age;
    });
    std::vector<const Incident*> resolved;
    for (const auto& [id, i] : incidents_) {
      if (i.state == IncidentState::kResolved) resolved.push_back(&i);
    }
    if (resolved.size() > max_count) {
      std::sort(resolved.begin(), resolved.end(), [](const Incident* a, const Incident* b) {
        return a->opened_at != b->opened_at ? a->opened_at < b->opened_at : a->id < b->id;
      });
      std::vector<std::int64_t> drop;
      for (std::size_t k = 0; k < resolved.size() - max_count; ++k) drop.push_back(resolved[k]->id);
      for (auto id : drop) incidents_.erase(id);
      removed += drop.size();
    }
    return removed;
  }

  Status putTarget(const TargetConfig& target) override {
    std::lock_guard lock(mutex_);
    if (fail_writes_) return writeError();
    auto it = std::find_if(targets_.begin(), targets_.end(),
                           [&](const TargetConfig& t) { return t.name == target.name; });
    if (it != targets_.end()) {
      *it = target;
    } else {
      targets_.push_back(target);
    }
    return std::monostate{};
  }

  Result<bool> removeTarget(const std::string& name) override {
    std::lock_guard lock(mutex_);
    if (fail_writes_) return writeError();
    return std::erase_if(targets_, [&](const TargetConfig& t) { return t.name == name; }) > 0;
  }

  Result<std::vector<TargetConfig>> targets(const Config&) override {
    std::lock_guard lock(mutex_);
    return targets_;
  }

  Status keepIdsAbove(std::int64_t last_id) override {
    std::lock_guard lock(mutex_);
    if (fail_writes_) return writeError();
    last_id_ = std::max(last_id_, last_id);
    return std::monostate{};
  }

  Result<std::string> ensureCurrent() override {
    std::lock_guard lock(mutex_);
    ++checks_;
    return std::exchange(replaced_, std::string());
  }

  /// The file is deleted under the service: everything stored is gone, and the next
  /// ensureCurrent() makes a new, empty one and says `what`.
  void deleteFile(const std::string& what = "incidents.db: it was deleted") {
    std::lock_guard lock(mutex_);
    incidents_.clear();
    targets_.clear();
    last_id_ = 0;
    replaced_ = what;
  }

  /// How many times ensureCurrent() was called.
  [[nodiscard]] int checks() {
    std::lock_guard lock(mutex_);
    return checks_;
  }

  /// Every write (insert or update) that was done, by id, in order.
  [[nodiscard]] std::vector<std::int64_t> writes() {
    std::lock_guard lock(mutex_);
    return writes_;
  }

  /// From now on, the stored incident `id` cannot be read back (its record is damaged).
  void makeUnreadable(std::int64_t id) {
    std::lock_guard lock(mutex_);
    unreadable_.insert(id);
  }

  /// From now on, every write fails (or succeeds again).
  void failWrites(bool fail) {
    std::lock_guard lock(mutex_);
    fail_writes_ = fail;
  }

 private:
  static Error writeError() { return makeError(ErrorCode::kIo, "incidents.db: disk I/O error"); }

  std::mutex mutex_;
  std::map<std::int64_t, Incident> incidents_;
  std::set<std::int64_t> unreadable_;
  std::vector<TargetConfig> targets_;
  std::int64_t last_id_ = 0;
  bool fail_writes_ = false;
  std::string replaced_;
  int checks_ = 0;
  std::vector<std::int64_t> writes_;
};

}  // namespace wctmon::testing
