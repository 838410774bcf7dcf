#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ports/alert_sink.h"
#include "model/mutex.h"

namespace wctmon {

/// Alerts delivered to every configured sink, each from a bounded queue and a thread of its own:
/// a sink that is slow or stuck (a syslog daemon that stopped reading, a web hook that does not
/// answer) delays neither the other sinks nor the sender (the incident effects, the store). An
/// alert a receiver may take later (ErrorCode::kIo) is tried again with backoff, in order, for
/// as long as its route allows; a sink that wants refreshes gets them while idle.
class AlertRouter final : public AlertSink {
 public:
  /// One destination: its name in the log, the status and the metrics ("journald"), the sink,
  /// and how many alerts may wait for it (the oldest are dropped beyond).
  struct Route {
    std::string name;
    std::shared_ptr<AlertSink> sink;
    std::size_t queue_limit = 1000;
    /// How long one alert is tried again before it counts as failed; zero: tried once.
    std::chrono::milliseconds retry_for{0};
  };

  /// What one sink did so far.
  struct SinkStats {
    std::string name;
    std::uint64_t delivered = 0;
    std::uint64_t failed = 0;
    /// Dropped unsent: its queue was full, or it was still stuck when the router stopped.
    std::uint64_t dropped = 0;
    /// Attempts that failed and were tried again.
    std::uint64_t retried = 0;
    std::size_t queued = 0;
    /// Why its last failed delivery failed; empty when none failed.
    std::string last_error;
  };

  /// How long a router that stops (or a sink that is replaced) waits for what is queued.
  static constexpr std::chrono::milliseconds kDrainTimeout{2000};
  /// The first wait before an alert is tried again; it doubles up to kMaxRetryDelay.
  static constexpr std::chrono::milliseconds kFirstRetryDelay{500};
  static constexpr std::chrono::milliseconds kMaxRetryDelay{30000};

  explicit AlertRouter(std::vector<Route> routes = {});
  /// Delivers what is queued, up to kDrainTimeout; a sink still stuck then is left to finish on
  /// its own (its thread keeps what it uses).
  ~AlertRouter() override;
  AlertRouter(const AlertRouter&) = delete;
  AlertRouter& operator=(const AlertRouter&) = delete;

  /// Queues `alert` for every sink and returns at once: never blocks on a sink.
  Status send(const Alert& alert) override;
  /// Queued with the alerts, in order, for each sink's resume().
  Status resume(const Alert& alert) override;

  /// Sends to `routes` from now on; the sinks replaced deliver what they have queued, on their
  /// own threads.
  void replaceRoutes(std::vector<Route> routes);

  /// Waits until every sink has delivered what was queued before the call, at most `timeout`;
  /// whether they all did.
  bool flush(std::chrono::milliseconds timeout);

  [[nodiscard]] std::vector<SinkStats> stats() const;

 private:
  class Worker;
  static std::vector<std::shared_ptr<Worker>> startWorkers(std::vector<Route> routes);

  mutable Mutex mutex_;
  std::vector<std::shared_ptr<Worker>> workers_ WCTMON_GUARDED_BY(mutex_);
  /// Replaced ones, until they have drained.
  std::vector<std::shared_ptr<Worker>> retired_ WCTMON_GUARDED_BY(mutex_);
};

}  // namespace wctmon
