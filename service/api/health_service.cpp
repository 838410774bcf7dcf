#include "api/health_service.h"

#include <utility>
#include <vector>

#include "api/grpc_errors.h"

namespace wctmon::api {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

/// One Watch call: the status it was last sent, and the one to send next. A write at a time;
/// gRPC is never called under the call's lock (a write that completes at once may run
/// OnWriteDone on the spot).
class HealthWatch final : public grpc::ServerWriteReactor<HealthCheckResponse> {
 public:
  /// Watches a name the service knows, starting from its status `first`; or, with no status, a
  /// name it does not know, which hears SERVICE_UNKNOWN and nothing after.
  HealthWatch(HealthService& owner, std::optional<HealthStatus> first)
      : owner_(owner),
        known_(first.has_value()),
        wanted_(first.value_or(HealthCheckResponse::SERVICE_UNKNOWN)) {}

  /// Sends `status` unless it is what the client was last told (or is being told).
  void update(HealthStatus status) {
    if (!known_) return;
    {
      std::lock_guard lock(mutex_);
      if (finish_ || finished_) return;
      wanted_ = status;
    }
    step();
  }

  void end(const grpc::Status& status) {
    {
      std::lock_guard lock(mutex_);
      if (finish_ || finished_) return;
      finish_ = status;
    }
    step();
  }

  void step() {
    std::unique_lock lock(mutex_);
    if (writing_ || finished_) return;
    if (finish_) {
      finished_ = true;
      const grpc::Status status = *finish_;
      lock.unlock();
      Finish(status);
      return;
    }
    if (sent_ == wanted_) return;
    sent_ = wanted_;
    writing_ = true;
    lock.unlock();
    // Only the holder of `writing_` touches current_.
    current_.set_status(*sent_);
    StartWrite(&current_);
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(mutex_);
      writing_ = false;
      // The client has gone: nothing more can reach it.
      if (!ok && !finish_)
        finish_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the stream broke");
    }
    step();
  }

  void OnCancel() override { end(grpc::Status::CANCELLED); }
  void OnDone() override { owner_.remove(this); }

 private:
  HealthService& owner_;
  const bool known_;
  std::mutex mutex_;
  HealthStatus wanted_;
  std::optional<HealthStatus> sent_;
  bool writing_ = false;
  bool finished_ = false;
  std::optional<grpc::Status> finish_;
  HealthCheckResponse current_;
};

namespace {

/// A Watch call refused at once; it deletes itself when gRPC is done with it.
class RefusedWatch final : public grpc::ServerWriteReactor<HealthCheckResponse> {
 public:
  explicit RefusedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

HealthService::HealthService(std::set<std::string> names, std::size_t max_watches)
    : names_(std::move(names)), max_watches_(max_watches) {}

HealthService::~HealthService() { endAll(); }

void HealthService::setServing(bool serving) {
  const HealthStatus status =
      serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  std::vector<std::shared_ptr<HealthWatch>> watching;
  {
    std::lock_guard lock(mutex_);
    if (status_ == status) return;
    status_ = status;
    for (const auto& [raw, watch] : watches_) watching.push_back(watch);
  }
  for (const auto& watch : watching) watch->update(status);
}

grpc::ServerUnaryReactor* HealthService::Check(grpc::CallbackServerContext* context,
                                               const HealthCheckRequest* request,
                                               HealthCheckResponse* response) {
  auto* reactor = context->DefaultReactor();
  if (auto unreadable = unreadableRequest(*request)) {
    reactor->Finish(*unreadable);
    return reactor;
  }
  if (!names_.contains(request->service())) {
    reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                 "no service \"" + request->service() + "\" here"));
    return reactor;
  }
  {
    std::lock_guard lock(mutex_);
    response->set_status(status_);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<HealthCheckResponse>* HealthService::Watch(
    grpc::CallbackServerContext* /*context*/, const HealthCheckRequest* request) {
  if (auto unreadable = unreadableRequest(*request)) return new RefusedWatch(*unreadable);
  const bool known = names_.contains(request->service());
  std::shared_ptr<HealthWatch> watch;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return new RefusedWatch(
          grpc::Status(grpc::StatusCode::UNAVAILABLE, "the service is stopping"));
    }
    if (watches_.size() >= max_watches_) {
      return new RefusedWatch(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "too many health watches at once (" + std::to_string(max_watches_) + "); use Check"));
    }
    watch = std::make_shared<HealthWatch>(*this, known ? std::optional(status_) : std::nullopt);
    watches_.emplace(watch.get(), watch);
  }
  // Outside the lock: gRPC may run the call's reactions here. `watch` keeps it alive meanwhile.
  watch->step();
  return watch.get();
}

void HealthService::endAll() {
  std::vector<std::shared_ptr<HealthWatch>> watching;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (const auto& [raw, watch] : watches_) watching.push_back(watch);
  }
  for (const auto& watch : watching) {
    watch->end(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the service is stopping"));
  }
}

std::size_t HealthService::watches() const {
  std::lock_guard lock(mutex_);
  return watches_.size();
}

void HealthService::remove(HealthWatch* watch) {
  std::shared_ptr<HealthWatch> last;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  if (auto it = watches_.find(watch); it != watches_.end()) {
    last = std::move(it->second);
    watches_.erase(it);
  }
}

}  // namespace wctmon::api
