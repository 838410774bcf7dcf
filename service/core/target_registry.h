#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/ports/incident_repository.h"
#include "core/target_matcher.h"
#include "model/mutex.h"
#include "model/result.h"

namespace wctmon {

/// The targets that select which processes are watched: those of the configuration file and
/// those added at run time (the API's AddTarget), which the store keeps so that they outlive a
/// restart. Thread-safe; what selects processes is handed out as a matcher nobody changes.
class TargetRegistry {
 public:
  /// Reads the runtime targets from `store` (nullptr: none are kept) against the defaults of
  /// `config`, whose targets are the file's.
  TargetRegistry(IncidentRepository* store, const Config& config);

  /// Takes the file's targets of `config`; the runtime targets are read again against its
  /// defaults (they take from them what they do not set themselves).
  void reconfigure(const Config& config);

  /// Adds or replaces (by name) a runtime target, kept in the store first.
  [[nodiscard]] Status add(const TargetConfig& target);
  /// Removes a runtime target; false when there was none by that name.
  [[nodiscard]] Result<bool> remove(const std::string& name);

  /// Every target, the file's first.
  [[nodiscard]] std::vector<TargetConfig> all() const;
  /// Those added at run time.
  [[nodiscard]] std::vector<TargetConfig> runtime() const;
  /// What selects processes now.
  [[nodiscard]] std::shared_ptr<const TargetMatcher> matcher() const;

 private:
  /// The runtime targets in the store, against `config`'s defaults; nullopt when unreadable.
  [[nodiscard]] std::optional<std::vector<TargetConfig>> readRuntime(const Config& config) const;
  /// Makes the matcher of the targets now.
  void rebuild() WCTMON_REQUIRES(mutex_);

  IncidentRepository* store_;
  /// Held across a runtime target's store write, so that the store and the matcher change in
  /// the same order.
  mutable Mutex mutex_;
  std::vector<TargetConfig> file_ WCTMON_GUARDED_BY(mutex_);
  std::vector<TargetConfig> runtime_ WCTMON_GUARDED_BY(mutex_);
  std::shared_ptr<const TargetMatcher> matcher_ WCTMON_GUARDED_BY(mutex_);
};

}  // namespace wctmon
