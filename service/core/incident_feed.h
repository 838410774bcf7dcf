#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/incident_tracker.h"
#include "model/mutex.h"

namespace wctmon {

/// The incidents as they are recorded, for whoever follows them live (the API's
/// WatchIncidents): the open ones when a subscriber joins, then every opening, update and
/// resolution, in the order they were recorded, with nothing missed or repeated in between.
/// The open incidents it keeps, their evidence included, are what status reads are served.
///
/// Listeners run on the thread that publishes (the incident effects, which also write the store)
/// under the feed's lock: they must only hand the event on (queue it), never wait.
class IncidentFeed {
 public:
  using Event = std::shared_ptr<const IncidentEvent>;
  using Listener = std::function<void(const Event&)>;
  using Initial = std::function<void(const std::vector<Incident>& open)>;

  /// Ends its subscription when destroyed or reset.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();
    /// Ends it: once this returns, its listener is not running and will not run again.
    void reset();

   private:
    friend class IncidentFeed;
    Subscription(IncidentFeed* feed, std::uint64_t id) : feed_(feed), id_(id) {}
    IncidentFeed* feed_ = nullptr;
    std::uint64_t id_ = 0;
  };

  /// Calls `initial` with the open incidents (oldest first), then `listener` with every event
  /// published after them. The feed must outlive the subscription.
  [[nodiscard]] Subscription subscribe(const Initial& initial, Listener listener)
      WCTMON_EXCLUDES(mutex_);

  /// Publishes one recorded event to every subscriber.
  void publish(IncidentEvent event) WCTMON_EXCLUDES(mutex_);

  /// Takes incidents that were open when the service started as open (before their events).
  void seed(const std::vector<Incident>& open) WCTMON_EXCLUDES(mutex_);

  /// The open incidents as last published (oldest first), shared rather than copied.
  [[nodiscard]] std::shared_ptr<const std::vector<Incident>> openIncidents() const;
  /// Gives `incident` what was recorded for it while open and what a decision does not carry:
  /// its evidence and its dump (when `incident` has none and it is open).
  void addRecordedEffects(Incident& incident) const;

  [[nodiscard]] std::size_t subscribers() const;

 private:
  void unsubscribe(std::uint64_t id) WCTMON_EXCLUDES(mutex_);
  /// Publishes what open_ holds now to the readers of openIncidents().
  void publishOpen() WCTMON_REQUIRES(mutex_) WCTMON_EXCLUDES(published_mutex_);

  mutable Mutex mutex_;
  std::map<std::int64_t, Incident> open_ WCTMON_GUARDED_BY(mutex_);  // by id: the oldest first
  std::map<std::uint64_t, Listener> listeners_ WCTMON_GUARDED_BY(mutex_);
  std::uint64_t next_id_ WCTMON_GUARDED_BY(mutex_) = 1;
  /// A reader of the open incidents takes only this lock, which guards only the pointer: it
  /// never waits for the listeners.
  mutable Mutex published_mutex_;
  std::shared_ptr<const std::vector<Incident>> published_ WCTMON_GUARDED_BY(published_mutex_) =
      std::make_shared<const std::vector<Incident>>();
};

}  // namespace wctmon
