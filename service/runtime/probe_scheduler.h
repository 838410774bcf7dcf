#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/monitor.h"
#include "core/ports/clock.h"
#include "core/ports/prober.h"
#include "core/probe_tracker.h"
#include "core/target_registry.h"

namespace wctmon {

/// Runs the liveness probes of the targets that have one, each at its interval with never more
/// than one in flight, and turns their verdicts into the monitor's symptoms: a target that fails
/// `failures` probes in a row is unresponsive (an incident opens on its oldest watched process,
/// with every thread's chain), and answers again after `successes` passes (it resolves). Which
/// targets have probes is read from the registry once a second, so that a reload or a target
/// registered through the API takes effect without a restart.
///
/// Everything runs on one strand of the service's context; stop() cancels the timers, and a
/// probe in flight ends by its own deadline with nothing more done.
class ProbeScheduler {
 public:
  struct Dependencies {
    Monitor& monitor;
    const TargetRegistry& targets;
    Prober& prober;
    const Clock& clock;
    boost::asio::io_context& io;
    /// Where an unresponsive target's analysis runs its completions.
    Executor analysis;
  };

  explicit ProbeScheduler(Dependencies deps);
  ~ProbeScheduler();
  ProbeScheduler(const ProbeScheduler&) = delete;
  ProbeScheduler& operator=(const ProbeScheduler&) = delete;

  void start();
  /// Stops the timers and waits for the probes in flight to end by their deadlines (they are
  /// all bounded); false when one did not within the longest deadline and a second: what it
  /// uses must then outlive the scheduler.
  bool stop();

  /// Every probed target's status, by target name.
  [[nodiscard]] std::vector<TargetProbeStatus> statuses() const;

 private:
  struct Probe;
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  void reconcile();
  void arm(const std::shared_ptr<Probe>& probe, std::chrono::milliseconds delay);
  void run(const std::shared_ptr<Probe>& probe);
  void take(const std::shared_ptr<Probe>& probe, const ProbeOutcome& outcome);
  /// The process an unresponsive incident of `target` is about: the oldest it watches.
  [[nodiscard]] std::optional<ProcessIdentity> processOf(const std::string& target) const;

  Dependencies deps_;
  Strand strand_;
  boost::asio::steady_timer reconcile_timer_;
  bool stopped_ = false;  // on the strand
  /// By target name; changed on the strand, read by statuses() under the mutex.
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Probe>> probes_;
  /// Probes whose prober has not called back yet, and the longest deadline among them.
  std::size_t in_flight_ = 0;
  std::chrono::milliseconds longest_timeout_{0};
  std::condition_variable ended_;
};

}  // namespace wctmon
