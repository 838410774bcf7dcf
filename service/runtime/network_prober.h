#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/executor.h"
#include "core/ports/prober.h"

namespace grpc {
class Channel;
}

namespace wctmon {

/// The prober of the service: TCP connects, HTTP(S) GETs and gRPC health checks on the
/// service's execution context (Asio), each held to its deadline by a timer of its own; Unix
/// socket connects and commands through the platform's LocalProber, as blocking work.
class NetworkProber final : public Prober {
 public:
  /// `blocking`: where the platform's probes may wait for their deadline (the pool's work()).
  NetworkProber(boost::asio::io_context& io, Executor blocking, LocalProber& local);
  ~NetworkProber() override;
  NetworkProber(const NetworkProber&) = delete;
  NetworkProber& operator=(const NetworkProber&) = delete;

  void asyncProbe(const ProbeConfig& probe, std::function<void(ProbeOutcome)> done) override;

 private:
  void probeGrpc(const ProbeConfig& probe, std::function<void(ProbeOutcome)> done);

  boost::asio::io_context& io_;
  Executor blocking_;
  LocalProber& local_;
  /// One channel per address, kept: a channel reconnects on its own, and a new one per probe
  /// would measure the handshake rather than the server.
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

}  // namespace wctmon
