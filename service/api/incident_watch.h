#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "core/executor.h"
#include "core/incident_feed.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#include "wctmon/v1/monitor.grpc.pb.h"
#pragma GCC diagnostic pop

namespace wctmon::api {

class IncidentWatchers;

/// One WatchIncidents call: the open incidents, then every event of the feed as it comes.
///
/// The feed's listener only queues (it runs on the thread that records incidents): writing and
/// finishing happen on gRPC's threads and the caller of end(). A client that lets more than
/// `queue_limit` events pile up is cut off with RESOURCE_EXHAUSTED: the events it missed are
/// dropped, never waited for.
class IncidentWatch final : public grpc::ServerWriteReactor<v1::IncidentEvent>,
                            public std::enable_shared_from_this<IncidentWatch> {
 public:
  /// `work` runs the writes that the feed's listener starts.
  IncidentWatch(IncidentWatchers& registry, std::size_t queue_limit, Executor work);

  /// Subscribes to `feed`: the open incidents are queued, and the events that follow.
  void subscribe(IncidentFeed& feed);
  /// Sends the headers and starts writing (unless the call has ended already).
  void begin();
  /// Finishes the call with `status` after the write in flight, dropping what is queued.
  void end(const grpc::Status& status);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  struct Pending {
    v1::IncidentEvent::Type type;
    IncidentFeed::Event event;
  };
  /// Takes the queue's next step (write, finish or rest) unless a write is in flight.
  void step();
  /// Has step() run on `work_` unless a write or a step is already coming.
  void kickLocked();
  /// Queues `event`, or cuts the client off when it is too far behind; called by the feed.
  void push(const IncidentFeed::Event& event);

  IncidentWatchers& registry_;
  const std::size_t queue_limit_;
  const Executor work_;
  std::mutex mutex_;
  std::deque<Pending> queue_;
  /// Events of the feed in the queue (the open incidents queued at the start do not count).
  std::size_t live_ = 0;
  bool kicked_ = false;
  /// The event being written: it must live until its write is done.
  v1::IncidentEvent current_;
  bool writing_ = false;
  bool finished_ = false;
  std::optional<grpc::Status> finish_;
  IncidentFeed::Subscription subscription_;
};

/// The WatchIncidents calls in progress, for their count and to end them at shutdown.
///
/// Locks are taken in this order: the registry's, the feed's, a call's. gRPC is called under
/// none of them (a call that completes at once may run the reactor's callbacks on the spot).
class IncidentWatchers {
 public:
  /// Makes, registers and starts a call on `feed`; it stays alive until gRPC is done with it.
  /// nullptr once endAll() has run.
  IncidentWatch* start(IncidentFeed& feed, std::size_t queue_limit, Executor work);
  /// Ends every call with UNAVAILABLE and refuses new ones: the service is stopping.
  void endAll();
  [[nodiscard]] std::size_t count() const;

 private:
  friend class IncidentWatch;
  void remove(IncidentWatch* watch);

  mutable std::mutex mutex_;
  std::map<IncidentWatch*, std::shared_ptr<IncidentWatch>> watches_;
  bool closed_ = false;
};

}  // namespace wctmon::api
