#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/incident_feed.h"
#include "core/incident_tracker.h"
#include "core/pending_writes.h"
#include "core/ports/alert_sink.h"
#include "core/ports/clock.h"
#include "core/ports/incident_repository.h"

namespace wctmon {

/// Where decided incident changes go, in the order they were decided: the store, and then the
/// feed of live followers. While the store fails (a full disk), the changes wait in memory and
/// are written when it takes them again; when its file went (deleted, replaced), a new one is
/// made with what is live: the open incidents as the feed keeps them, and the runtime targets. Each
/// outage and recovery is said once, in the log and an alert. Used by one thread at a time (the
/// incident effects); its counters are read from any thread.
class IncidentRecorder {
 public:
  /// How many incidents' changes wait for a store that cannot take them: about 10 KiB each with
  /// their evidence, 10 MiB at most.
  static constexpr std::size_t kMaxPendingWrites = 1000;
  /// How often a failing store is tried again (at a discovery or with a new change).
  static constexpr std::chrono::seconds kStoreRetryInterval{1};

  struct Dependencies {
    IncidentRepository* store;  // nullptr: incidents are kept in memory only
    AlertSink* alerts;          // nullptr: no alerts
    const Clock& clock;
    /// The runtime targets, written again into a store made anew with the open incidents.
    std::function<std::vector<TargetConfig>()> runtime_targets = {};
  };

  struct Counters {
    std::atomic<std::uint64_t> store_errors{0};
    /// Incidents whose latest change waits for the store, and changes dropped because too
    /// many waited.
    std::atomic<std::size_t> pending_writes{0};
    std::atomic<std::uint64_t> store_writes_dropped{0};
  };

  /// Reads the highest id the store ever gave.
  explicit IncidentRecorder(Dependencies deps);
  /// Tries once more to write what waits for the store, and says how many changes are lost
  /// when it cannot (their open records are resolved at the next start).
  ~IncidentRecorder();
  IncidentRecorder(const IncidentRecorder&) = delete;
  IncidentRecorder& operator=(const IncidentRecorder&) = delete;

  /// Writes `incident` to the store (or keeps it waiting while the store fails) and publishes
  /// it to the feed as `type`. An open incident recorded without evidence takes the evidence
  /// recorded for it before (a change decided before its capture came back), so that what the
  /// store, the feed and the alerts get is the whole incident. Returns it so.
  Incident record(Incident incident, IncidentEvent::Type type);
  /// Checks that the store's file is still in place and retries what waits for it (at most once
  /// per kStoreRetryInterval while it fails).
  void checkStore();

  /// The highest id recorded or ever given by the store (0 without a store, or when it cannot
  /// be read): a new incident's id is above it.
  [[nodiscard]] std::int64_t lastId() const { return last_id_; }
  /// The incidents the store holds open (at a start: those open when the service stopped).
  [[nodiscard]] std::vector<Incident> storedOpenIncidents() const;
  /// Deletes the resolved incidents past `retention`. Touches only the store: safe from any
  /// thread.
  void applyRetention(const Config::Retention& retention) const;

  [[nodiscard]] bool hasStore() const { return deps_.store != nullptr; }
  /// Whether incident `id` is still kept: open, stored, or not written yet. True when that cannot
  /// be told (no store, a store that does not answer). Safe from any thread.
  [[nodiscard]] bool keeps(std::int64_t id) const;
  [[nodiscard]] IncidentFeed& feed() { return feed_; }
  [[nodiscard]] const IncidentFeed& feed() const { return feed_; }
  [[nodiscard]] const Counters& counters() const { return counters_; }

 private:
  void writeStore(bool force);
  /// The store failed: said once (log and alert) until it takes writes again.
  void storeFailed(const Error& error);
  /// The store's file went (`what`) and a new one was made: what is live is written to it again;
  /// said in the log and an alert.
  void storeRemade(const std::string& what);
  void sendStoreAlert(AlertKind kind, AlertSeverity severity, std::string message,
                      std::string reason);

  Dependencies deps_;
  PendingWrites pending_writes_{kMaxPendingWrites};
  std::atomic<std::int64_t> last_id_{0};
  bool store_failing_ = false;
  /// Whether the overflow of the waiting changes was said (once per outage).
  bool drop_reported_ = false;
  Clock::SteadyTimePoint last_store_attempt_{};
  Counters counters_;
  IncidentFeed feed_;
};

}  // namespace wctmon
