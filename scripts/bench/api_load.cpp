// Load on the service's API from this host, for scripts/bench/api.py. Two modes:
//
//   status: C callers (callback API, or --client sync: a thread each), each a closed loop of
//           GetStatus calls (the next starts when the last answers), for S seconds after a
//           warm-up or until M calls; spread over K channels (K = 1: one HTTP/2 connection for
//           all, K = C: one each). With --rate R instead: an open loop, R calls a second started
//           on schedule whatever the answers (callback API, at most C in flight: a call that
//           would exceed it is counted as "late" and not made); each latency is measured from
//           the call's scheduled time, so that a stalled service is not hidden by calls that
//           were never sent.
//   watch:  W WatchIncidents streams that only read, for S seconds; says on a first line when
//           the service counts them all as watchers, so that the caller can measure meanwhile.
//
// Loopback only: unix:PATH, 127.0.0.0/8, [::1] or localhost; anything else is refused. Bounded
// in callers, streams, time and calls. Prints one JSON object (status: calls, errors by status
// code, req/s, latency p50/p90/p99/max in µs; watch: events by type, how streams ended).
//
// Usage: wctmon-api-load --server ADDR --token-file FILE status [--client callback|sync]
//                        [--callers C] [--channels K] [--seconds S] [--warmup S] [--max-calls M]
//        wctmon-api-load --server ADDR --token-file FILE watch [--streams W] [--channels K]
//                        [--seconds S]
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "wctmon/v1/monitor.grpc.pb.h"

namespace {

namespace v1 = wctmon::v1;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kMaxCallers = 1024;
constexpr int kMaxStreams = 10000;
constexpr double kMaxSeconds = 600;
constexpr std::uint64_t kMaxCalls = 50'000'000;
constexpr double kMaxRate = 1'000'000;
/// A call that takes longer is an error (DEADLINE_EXCEEDED), not a stuck benchmark.
constexpr auto kCallDeadline = 5s;
constexpr int kStatusCodes = 17;

struct Options {
  std::string mode;
  /// "callback" (the async API) or "sync" (a thread per caller, blocking calls).
  std::string client = "callback";
  std::string server;
  std::string token_file;
  int callers = 16;
  int streams = 100;
  int channels = 1;
  double seconds = 5;
  double warmup = 1;
  std::uint64_t max_calls = 5'000'000;
  /// Calls a second in the open loop; 0: the closed loop of `callers`.
  double rate = 0;
};

const char* codeName(int code) {
  static constexpr std::array<const char*, kStatusCodes> kNames = {"OK",
                                                                   "CANCELLED",
                                                                   "UNKNOWN",
                                                                   "INVALID_ARGUMENT",
                                                                   "DEADLINE_EXCEEDED",
                                                                   "NOT_FOUND",
                                                                   "ALREADY_EXISTS",
                                                                   "PERMISSION_DENIED",
                                                                   "RESOURCE_EXHAUSTED",
                                                                   "FAILED_PRECONDITION",
                                                                   "ABORTED",
                                                                   "OUT_OF_RANGE",
                                                                   "UNIMPLEMENTED",
                                                                   "INTERNAL",
                                                                   "UNAVAILABLE",
                                                                   "DATA_LOSS",
                                                                   "UNAUTHENTICATED"};
  return code >= 0 && code < kStatusCodes ? kNames[static_cast<std::size_t>(code)] : "?";
}

/// Whether `server` can only reach this host. The benchmark loads a service hard: it is never
/// pointed at another machine by a typo.
bool loopbackOnly(const std::string& server, std::string& why) {
  if (server.rfind("unix:", 0) == 0) {
    if (server.size() > 5 && server[5] == '/') return true;
    why = "a Unix socket is given by its absolute path (unix:/path)";
    return false;
  }
  std::string host;
  std::string port;
  if (server.rfind('[', 0) == 0) {
    const auto close = server.find(']');
    if (close == std::string::npos || server.compare(close + 1, 1, ":") != 0) {
      why = "an IPv6 address is written [::1]:PORT";
      return false;
    }
    host = server.substr(1, close - 1);
    port = server.substr(close + 2);
  } else {
    const auto colon = server.rfind(':');
    if (colon == std::string::npos) {
      why = "a TCP address is HOST:PORT";
      return false;
    }
    host = server.substr(0, colon);
    port = server.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
      std::stoi(port) > 65535) {
    why = "the port is a number from 1 to 65535";
    return false;
  }
  bool loopback = host == "::1" || host == "localhost";
  if (host.rfind("127.", 0) == 0) {
    int dots = 0;
    loopback = host.find_first_not_of("0123456789.") == std::string::npos;
    for (char c : host) dots += c == '.' ? 1 : 0;
    loopback = loopback && dots == 3;
  }
  if (!loopback) why = host + " is not a loopback address (127.0.0.0/8, [::1], localhost)";
  return loopback;
}

void usage(const char* why) {
  std::cerr << "wctmon-api-load: " << why << "\n"
            << "usage: wctmon-api-load --server unix:/PATH|127.0.0.1:PORT --token-file FILE\n"
            << "         status [--client callback|sync] [--callers C] [--channels K] [--seconds "
               "S] [--warmup S] "
               "[--max-calls M] [--rate R]\n"
            << "       | watch [--streams W] [--channels K] [--seconds S]\n";
}

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "status" || arg == "watch") {
      o.mode = arg;
      continue;
    }
    if (i + 1 >= argc) {
      usage(("missing value after " + arg).c_str());
      return std::nullopt;
    }
    const std::string value = argv[++i];
    try {
      if (arg == "--server") {
        o.server = value;
      } else if (arg == "--token-file") {
        o.token_file = value;
      } else if (arg == "--client") {
        o.client = value;
      } else if (arg == "--callers") {
        o.callers = std::stoi(value);
      } else if (arg == "--streams") {
        o.streams = std::stoi(value);
      } else if (arg == "--channels") {
        o.channels = std::stoi(value);
      } else if (arg == "--seconds") {
        o.seconds = std::stod(value);
      } else if (arg == "--warmup") {
        o.warmup = std::stod(value);
      } else if (arg == "--rate") {
        o.rate = std::stod(value);
      } else if (arg == "--max-calls") {
        o.max_calls = std::stoull(value);
      } else {
        usage(("unknown option " + arg).c_str());
        return std::nullopt;
      }
    } catch (const std::exception&) {
      usage(("not a number: " + arg + " " + value).c_str());
      return std::nullopt;
    }
  }
  std::string why;
  if (o.mode.empty()) {
    usage("status or watch?");
  } else if (o.server.empty() || o.token_file.empty()) {
    usage("--server and --token-file are needed");
  } else if (!loopbackOnly(o.server, why)) {
    usage(("refused --server " + o.server + ": " + why).c_str());
  } else if (o.client != "callback" && o.client != "sync") {
    usage("--client is callback or sync");
  } else if (o.callers < 1 || o.callers > kMaxCallers) {
    usage("--callers is from 1 to 1024");
  } else if (o.streams < 1 || o.streams > kMaxStreams) {
    usage("--streams is from 1 to 10000");
  } else if (o.channels < 1 || o.channels > (o.mode == "status" ? o.callers : o.streams)) {
    usage("--channels is from 1 to the number of callers (streams)");
  } else if (!(o.seconds > 0 && o.seconds <= kMaxSeconds) ||
             !(o.warmup >= 0 && o.warmup <= kMaxSeconds)) {
    usage("--seconds is above 0 and --warmup at least 0, both at most 600");
  } else if (!(o.rate >= 0 && o.rate <= kMaxRate)) {
    usage("--rate is from 0 (a closed loop) to 1000000 calls a second");
  } else if (o.rate > 0 && o.client != "callback") {
    usage("--rate drives the callback client");
  } else if (o.max_calls < 1 || o.max_calls > kMaxCalls) {
    usage("--max-calls is from 1 to 50000000");
  } else {
    return o;
  }
  return std::nullopt;
}

std::optional<std::string> readToken(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return std::nullopt;
  auto token = text.str();
  token.erase(token.find_last_not_of(" \t\r\n") + 1);
  token.erase(0, token.find_first_not_of(" \t\r\n"));
  return token;
}

/// `count` channels, each its own connection: gRPC otherwise shares one subchannel between
/// channels of equal arguments.
std::vector<std::shared_ptr<grpc::Channel>> openChannels(const std::string& server, int count) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < count; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("wctmon.bench.channel", i);
    channels.push_back(grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
  }
  return channels;
}

/// One GetStatus, to fail fast on a wrong token or address rather than measure refusals.
std::optional<v1::ServiceStatus> status(v1::Monitor::Stub& stub, const std::string& bearer,
                                        std::string& why) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", bearer);
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  v1::GetStatusRequest request;
  v1::ServiceStatus response;
  const auto s = stub.GetStatus(&context, request, &response);
  if (s.ok()) return response;
  why = std::string(codeName(s.error_code())) + ": " + s.error_message();
  return std::nullopt;
}

double cpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

std::string errorsJson(const std::array<std::atomic<std::uint64_t>, kStatusCodes>& errors) {
  std::string out = "{";
  for (int code = 1; code < kStatusCodes; ++code) {
    const auto n = errors[static_cast<std::size_t>(code)].load();
    if (n == 0) continue;
    out +=
        (out.size() > 1 ? ", \"" : "\"") + std::string(codeName(code)) + "\": " + std::to_string(n);
  }
  return out + "}";
}

/// What every caller shares: the time window, the call budget and the tallies.
class StatusLoad {
 public:
  StatusLoad(const Options& o, std::string bearer)
      : bearer_(std::move(bearer)),
        max_calls_(o.max_calls),
        measure_from_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(o.warmup))),
        until_(measure_from_ + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(o.seconds))),
        running_(o.rate > 0 ? 1 : o.callers) {}

  const std::string& bearer() const { return bearer_; }

  /// Whether another call may start at `now`; the first refusal after the budget ends the window.
  bool mayStart(Clock::time_point now) {
    if (now >= until_) return false;
    if (started_.fetch_add(1) < max_calls_) return true;
    std::lock_guard lock(mutex_);
    if (!budget_spent_at_) budget_spent_at_ = now;
    return false;
  }

  bool measured(Clock::time_point started) const {
    return started >= measure_from_ && started < until_;
  }

  void fail(int code) { ++errors_[static_cast<std::size_t>(code)]; }

  /// An open-loop call not made: as many as the in-flight bound were still unanswered.
  void late() { ++late_; }

  /// Every answer, warm-up included: the service's CPU over the whole run divides by it.
  void answered() { ++answered_; }

  void callerDone(std::vector<std::uint32_t> latencies) {
    std::lock_guard lock(mutex_);
    latencies_.insert(latencies_.end(), latencies.begin(), latencies.end());
    if (--running_ == 0) done_.notify_all();
  }

  void waitAll() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return running_ == 0; });
  }

  /// The result, once every caller is done.
  std::string json(const Options& o, double client_cpu) {
    std::lock_guard lock(mutex_);
    auto end = until_;
    if (budget_spent_at_ && *budget_spent_at_ < end) end = *budget_spent_at_;
    const double window = std::chrono::duration<double>(end - measure_from_).count();
    std::uint64_t failed = 0;
    for (int code = 1; code < kStatusCodes; ++code) {
      failed += errors_[static_cast<std::size_t>(code)].load();
    }
    const auto ok = latencies_.size();
    auto at = [&](double p) -> std::uint32_t {
      if (latencies_.empty()) return 0;
      const auto i = std::min(latencies_.size() - 1,
                              static_cast<std::size_t>(p * static_cast<double>(latencies_.size())));
      std::nth_element(latencies_.begin(), latencies_.begin() + static_cast<std::ptrdiff_t>(i),
                       latencies_.end());
      return latencies_[i];
    };
    const auto p50 = at(0.50);
    const auto p90 = at(0.90);
    const auto p99 = at(0.99);
    const auto max =
        latencies_.empty() ? 0 : *std::max_element(latencies_.begin(), latencies_.end());
    char out[1024];
    std::snprintf(out, sizeof(out),
                  "{\"mode\": \"status\", \"client\": \"%s\", \"server\": \"%s\", \"callers\": %d, "
                  "\"channels\": %d, \"rate\": %.0f, \"late\": %llu, "
                  "\"seconds\": %.3f, \"calls\": %llu, \"ok\": %llu, \"errors\": %s, "
                  "\"rps\": %.1f, \"latency_us\": {\"p50\": %u, \"p90\": %u, \"p99\": %u, "
                  "\"max\": %u}, \"all_calls\": %llu, \"client_cpu_seconds\": %.3f}",
                  o.client.c_str(), o.server.c_str(), o.callers, o.channels, o.rate,
                  static_cast<unsigned long long>(late_.load()), window,
                  static_cast<unsigned long long>(ok + failed), static_cast<unsigned long long>(ok),
                  errorsJson(errors_).c_str(),
                  window > 0 ? static_cast<double>(ok + failed) / window : 0.0, p50, p90, p99, max,
                  static_cast<unsigned long long>(answered_.load()), client_cpu);
    return out;
  }

 private:
  const std::string bearer_;
  const std::uint64_t max_calls_;
  const Clock::time_point measure_from_;
  const Clock::time_point until_;
  std::atomic<std::uint64_t> started_{0};
  std::atomic<std::uint64_t> answered_{0};
  std::atomic<std::uint64_t> late_{0};
  std::array<std::atomic<std::uint64_t>, kStatusCodes> errors_{};
  std::mutex mutex_;
  std::condition_variable done_;
  int running_;
  std::optional<Clock::time_point> budget_spent_at_;
  std::vector<std::uint32_t> latencies_;
};

/// One closed loop of GetStatus calls: the next call starts from the answer of the last, so that
/// C callers keep exactly C calls in flight. On the callback API (next(): the answer comes on
/// gRPC's threads) or blocking, on a thread of the caller's own (loop()).
class Caller {
 public:
  Caller(StatusLoad& load, v1::Monitor::Stub& stub) : load_(load), stub_(stub) {
    latencies_.reserve(1 << 16);
  }

  void loop() {
    for (auto now = Clock::now(); load_.mayStart(now); now = Clock::now()) {
      grpc::ClientContext context;
      context.AddMetadata("authorization", load_.bearer());
      context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
      started_ = now;
      answered(stub_.GetStatus(&context, request_, &response_), false);
    }
    load_.callerDone(std::move(latencies_));
  }

  void next() {
    const auto now = Clock::now();
    if (!load_.mayStart(now)) {
      load_.callerDone(std::move(latencies_));
      return;
    }
    context_ = std::make_unique<grpc::ClientContext>();
    context_->AddMetadata("authorization", load_.bearer());
    context_->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    response_.Clear();
    started_ = now;
    stub_.async()->GetStatus(context_.get(), &request_, &response_,
                             [this](grpc::Status s) { answered(s, true); });
  }

 private:
  void answered(const grpc::Status& s, bool then_next) {
    const auto took = Clock::now() - started_;
    load_.answered();
    if (load_.measured(started_)) {
      if (s.ok()) {
        latencies_.push_back(static_cast<std::uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
      } else {
        load_.fail(s.error_code());
      }
    }
    if (then_next) next();
  }

  StatusLoad& load_;
  v1::Monitor::Stub& stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  v1::GetStatusRequest request_;
  v1::ServiceStatus response_;
  Clock::time_point started_;
  std::vector<std::uint32_t> latencies_;
};

/// The open loop: calls started on a fixed schedule (`rate` a second) whatever the answers, each
/// measured from the time it was due, at most `callers` in flight.
class Pacer {
 public:
  Pacer(StatusLoad& load, std::vector<std::unique_ptr<v1::Monitor::Stub>>& stubs, const Options& o)
      : load_(load), stubs_(stubs), rate_(o.rate), max_in_flight_(o.callers) {}

  void run() {
    const auto began = Clock::now();
    const auto period = std::chrono::duration<double>(1.0 / rate_);
    for (std::uint64_t k = 0;; ++k) {
      const auto due =
          began + std::chrono::duration_cast<Clock::duration>(period * static_cast<double>(k));
      // Sleeps are coarser than the period: every call due by now starts at once.
      if (Clock::now() < due) std::this_thread::sleep_until(due);
      if (!load_.mayStart(due)) break;
      if (in_flight_.load() >= max_in_flight_) {
        if (load_.measured(due)) load_.late();
        continue;
      }
      ++in_flight_;
      new Call(*this, *stubs_[k % stubs_.size()], due);  // deletes itself when answered
    }
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return in_flight_.load() == 0; });
    load_.callerDone(std::move(latencies_));
  }

 private:
  struct Call {
    Call(Pacer& owner, v1::Monitor::Stub& stub, Clock::time_point due_at)
        : pacer(owner), due(due_at) {
      context.AddMetadata("authorization", pacer.load_.bearer());
      context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
      stub.async()->GetStatus(&context, &request, &response, [this](const grpc::Status& s) {
        pacer.answered(s, due);
        delete this;
      });
    }
    Pacer& pacer;
    const Clock::time_point due;
    grpc::ClientContext context;
    v1::GetStatusRequest request;
    v1::ServiceStatus response;
  };

  void answered(const grpc::Status& s, Clock::time_point due) {
    const auto took = Clock::now() - due;
    load_.answered();
    {
      std::lock_guard lock(mutex_);
      if (load_.measured(due)) {
        if (s.ok()) {
          latencies_.push_back(static_cast<std::uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
        } else {
          load_.fail(s.error_code());
        }
      }
      if (--in_flight_ == 0) idle_.notify_all();
    }
  }

  StatusLoad& load_;
  std::vector<std::unique_ptr<v1::Monitor::Stub>>& stubs_;
  const double rate_;
  const int max_in_flight_;
  std::atomic<int> in_flight_{0};
  std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<std::uint32_t> latencies_;
};

int runStatus(const Options& o, const std::string& bearer) {
  auto channels = openChannels(o.server, o.channels);
  std::vector<std::unique_ptr<v1::Monitor::Stub>> stubs;
  for (auto& channel : channels) {
    stubs.push_back(v1::Monitor::NewStub(channel));
    std::string why;
    if (!status(*stubs.back(), bearer, why)) {
      std::cerr << "wctmon-api-load: GetStatus on " << o.server << " failed: " << why << "\n";
      return kExitError;
    }
  }
  const double cpu0 = cpuSeconds();
  StatusLoad load(o, bearer);
  if (o.rate > 0) {
    Pacer(load, stubs, o).run();
    std::cout << load.json(o, cpuSeconds() - cpu0) << std::endl;
    return kExitOk;
  }
  std::vector<std::unique_ptr<Caller>> callers;
  for (int i = 0; i < o.callers; ++i) {
    callers.push_back(
        std::make_unique<Caller>(load, *stubs[static_cast<std::size_t>(i % o.channels)]));
  }
  std::vector<std::thread> threads;
  if (o.client == "sync") {
    for (auto& caller : callers) threads.emplace_back([&caller] { caller->loop(); });
  } else {
    for (auto& caller : callers) caller->next();
  }
  load.waitAll();
  for (auto& t : threads) t.join();
  std::cout << load.json(o, cpuSeconds() - cpu0) << std::endl;
  return kExitOk;
}

/// A WatchIncidents stream that reads every event and counts it by type.
class Watcher final : public grpc::ClientReadReactor<v1::IncidentEvent> {
 public:
  Watcher(v1::Monitor::Stub& stub, const std::string& bearer) {
    context_.AddMetadata("authorization", bearer);
    stub.async()->WatchIncidents(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ends: OnDone follows
    ++events_[static_cast<std::size_t>(event_.type()) % events_.size()];
    StartRead(&event_);
  }

  void OnDone(const grpc::Status& s) override {
    std::lock_guard lock(mutex_);
    ended_ = s.error_code();
    ended_at_ = Clock::now();
    done_.notify_all();
  }

  void cancel() { context_.TryCancel(); }

  /// How the stream ended, once it has.
  int waitEnded() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return ended_.has_value(); });
    return *ended_;
  }

  std::uint64_t events(int type) const { return events_[static_cast<std::size_t>(type)].load(); }

 private:
  grpc::ClientContext context_;
  v1::WatchIncidentsRequest request_;
  v1::IncidentEvent event_;
  std::array<std::atomic<std::uint64_t>, 5> events_{};
  std::mutex mutex_;
  std::condition_variable done_;
  std::optional<int> ended_;
  Clock::time_point ended_at_;
};

int runWatch(const Options& o, const std::string& bearer) {
  auto channels = openChannels(o.server, o.channels);
  // Watchers are counted from a channel of their own, with no stream on it.
  auto probe_channel = openChannels(o.server, 1).front();
  auto probe = v1::Monitor::NewStub(probe_channel);
  std::string why;
  const auto before = status(*probe, bearer, why);
  if (!before) {
    std::cerr << "wctmon-api-load: GetStatus on " << o.server << " failed: " << why << "\n";
    return kExitError;
  }
  std::vector<std::unique_ptr<v1::Monitor::Stub>> stubs;
  for (auto& channel : channels) stubs.push_back(v1::Monitor::NewStub(channel));
  const auto began = Clock::now();
  const auto until =
      began + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < o.streams; ++i) {
    watchers.push_back(
        std::make_unique<Watcher>(*stubs[static_cast<std::size_t>(i % o.channels)], bearer));
  }
  // Ready when the service counts every stream (and those of anyone else watching already).
  const auto expected = before->api_watchers() + static_cast<std::uint32_t>(o.streams);
  std::uint32_t seen = 0;
  while (Clock::now() < until) {
    if (const auto now = status(*probe, bearer, why)) seen = now->api_watchers();
    if (seen >= expected) break;
    std::this_thread::sleep_for(20ms);
  }
  const double connect_ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
  std::cout << "{\"ready\": " << (seen >= expected ? "true" : "false") << ", \"watchers\": " << seen
            << ", \"connect_ms\": " << connect_ms << "}" << std::endl;
  const double cpu0 = cpuSeconds();
  std::this_thread::sleep_until(until);
  const auto after = status(*probe, bearer, why);
  for (auto& w : watchers) w->cancel();
  std::array<std::uint64_t, kStatusCodes> ended{};
  std::array<std::uint64_t, 5> events{};
  for (auto& w : watchers) {
    ++ended[static_cast<std::size_t>(w->waitEnded()) % kStatusCodes];
    for (int t = 0; t < 5; ++t) events[static_cast<std::size_t>(t)] += w->events(t);
  }
  std::string ends = "{";
  for (int code = 0; code < kStatusCodes; ++code) {
    if (ended[static_cast<std::size_t>(code)] == 0) continue;
    ends += (ends.size() > 1 ? ", \"" : "\"") + std::string(codeName(code)) +
            "\": " + std::to_string(ended[static_cast<std::size_t>(code)]);
  }
  ends += "}";
  std::cout << "{\"mode\": \"watch\", \"server\": \"" << o.server
            << "\", \"streams\": " << o.streams << ", \"channels\": " << o.channels
            << ", \"watchers_at_end\": "
            << (after ? static_cast<long long>(after->api_watchers()) : -1)
            << ", \"events\": {\"EXISTING\": " << events[1] << ", \"OPENED\": " << events[2]
            << ", \"UPDATED\": " << events[3] << ", \"RESOLVED\": " << events[4]
            << "}, \"ended\": " << ends << ", \"client_cpu_seconds\": " << cpuSeconds() - cpu0
            << "}" << std::endl;
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = parse(argc, argv);
  if (!options) return kExitUsage;
  const auto token = readToken(options->token_file);
  if (!token) {
    std::cerr << "wctmon-api-load: cannot read the token file " << options->token_file << "\n";
    return kExitError;
  }
  const std::string bearer = "Bearer " + *token;
  return options->mode == "status" ? runStatus(*options, bearer) : runWatch(*options, bearer);
}
