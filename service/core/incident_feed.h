#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/incident_tracker.h"

namespace wctmon {

/// The incidents as they are recorded, for whoever follows them live (the API's
/// WatchIncidents): the open ones when a subscriber joins, then every opening, update and
/// resolution, in the order they were recorded, with nothing missed or repeated in between.
///
/// Listeners run on the thread that publishes (the monitor's effects, which also write the store)
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
  [[nodiscard]] Subscription subscribe(const Initial& initial, Listener listener);

  /// Publishes one recorded event to every subscriber.
  void publish(IncidentEvent event);

  /// Takes incidents that were open when the service started as open (before their events).
  void seed(const std::vector<Incident>& open);

  [[nodiscard]] std::size_t subscribers() const;

 private:
  void unsubscribe(std::uint64_t id);

  mutable std::mutex mutex_;
  std::map<std::int64_t, Incident> open_;  // by id: the oldest first
  std::map<std::uint64_t, Listener> listeners_;
  std::uint64_t next_id_ = 1;
};

}  // namespace wctmon
