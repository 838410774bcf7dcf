#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "api/connection_front.h"
#include "api/service_control.h"
#include "core/monitor.h"
#include "model/result.h"

class CivetServer;

namespace prometheus {
class Histogram;
class Registry;
}  // namespace prometheus

namespace wctmon::api {

/// The service's figures for Prometheus, served over HTTP at /metrics (civetweb, prometheus-cpp's
/// text format): incidents open and opened by kind, and open by target and kind with the oldest's
/// start; samples taken, skipped, overdue and failed, how long samples take (a histogram); what
/// each target watches and its probe's results; alert delivery by sink; the store's errors; the
/// API's watchers and connections; whether the service and its wait-chain source work; the build;
/// and the standard process_* figures of the service's own process. Every figure but the histogram
/// is read from the monitor and the service at scrape time; none of them takes the monitor's
/// decision lock.
class Metrics {
 public:
  /// Connections served at once; a connection that sends no whole request within
  /// kRequestTimeout is closed (a scrape times out at 10 s by default).
  static constexpr int kWorkers = 8;
  static constexpr std::chrono::milliseconds kRequestTimeout{3000};

  struct Dependencies {
    Monitor& monitor;
    /// The open incidents.
    const IncidentEffects& incidents;
    ServiceControl& control;
    /// The API's WatchIncidents calls now (none without the API).
    std::function<std::size_t()> watchers;
    /// The connections of the API's own listeners (none without them).
    std::function<ConnectionFront::Counts()> connections;
  };

  explicit Metrics(Dependencies deps);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// Serves the figures at `listen` ("127.0.0.1:7788", "[::1]:7788"; port 0 = one the system
  /// chooses); an address that cannot be bound is an error naming it.
  [[nodiscard]] Status start(const std::string& listen);
  /// Stops serving them; a scrape in progress ends first.
  void stop();
  /// Where they are served, with the port that was chosen ("127.0.0.1:41234").
  [[nodiscard]] const std::string& listening() const { return listening_; }

  /// Records how long one sample took (the scheduler calls it for each).
  void observeSample(std::chrono::microseconds duration);

 private:
  class Figures;
  class Page;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram* sample_duration_ = nullptr;
  std::shared_ptr<Figures> figures_;
  std::unique_ptr<Page> page_;
  /// After page_: the server stops (its scrapes end) before the page it serves goes.
  std::unique_ptr<CivetServer> server_;
  std::string listening_;
};

}  // namespace wctmon::api
