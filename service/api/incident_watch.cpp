#include "api/incident_watch.h"

#include <utility>
#include <vector>

#include "wire/proto_convert.h"

namespace wctmon::api {
namespace {

v1::IncidentEvent::Type toProto(IncidentEvent::Type type) {
  switch (type) {
    case IncidentEvent::Type::kOpened:
      return v1::IncidentEvent::TYPE_OPENED;
    case IncidentEvent::Type::kUpdated:
      return v1::IncidentEvent::TYPE_UPDATED;
    case IncidentEvent::Type::kResolved:
      return v1::IncidentEvent::TYPE_RESOLVED;
  }
  return v1::IncidentEvent::TYPE_UNSPECIFIED;
}

}  // namespace

IncidentWatch::IncidentWatch(IncidentWatchers& registry, std::size_t queue_limit, Executor work)
    : registry_(registry), queue_limit_(queue_limit), work_(std::move(work)) {}

void IncidentWatch::subscribe(IncidentFeed& feed) {
  subscription_ = feed.subscribe(
      [this](const std::vector<Incident>& open) {
        std::lock_guard lock(mutex_);
        for (const auto& incident : open) {
          queue_.push_back({v1::IncidentEvent::TYPE_EXISTING,
                            std::make_shared<const IncidentEvent>(
                                IncidentEvent{IncidentEvent::Type::kOpened, incident})});
        }
      },
      [this](const IncidentFeed::Event& event) { push(event); });
}

void IncidentWatch::begin() {
  {
    std::lock_guard lock(mutex_);
    if (finished_ || writing_) return;  // ended before it began: the service is stopping
    writing_ = true;                    // nobody writes or finishes while the headers go
  }
  // Headers now: the client knows it is subscribed before the first event.
  StartSendInitialMetadata();
  {
    std::lock_guard lock(mutex_);
    writing_ = false;
  }
  step();
}

void IncidentWatch::push(const IncidentFeed::Event& event) {
  std::lock_guard lock(mutex_);
  if (finished_ || finish_) return;
  if (live_ >= queue_limit_) {
    queue_.clear();
    live_ = 0;
    finish_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                           "this client read incident events slower than they came: more than " +
                               std::to_string(queue_limit_) +
                               " were waiting (api.watch_queue); watch again to resume");
  } else {
    queue_.push_back({toProto(event->type), event});
    ++live_;
  }
  kickLocked();
}

void IncidentWatch::kickLocked() {
  if (writing_ || kicked_) return;
  kicked_ = true;
  // The feed's listener must not call into gRPC: a call that completes at once may run this
  // reactor's callbacks on the spot, under the feed's lock.
  work_([self = shared_from_this()] { self->step(); });
}

void IncidentWatch::end(const grpc::Status& status) {
  {
    std::lock_guard lock(mutex_);
    if (finished_ || finish_) return;
    queue_.clear();
    live_ = 0;
    finish_ = status;
  }
  step();
}

void IncidentWatch::step() {
  std::unique_lock lock(mutex_);
  kicked_ = false;
  if (writing_ || finished_) return;
  if (finish_) {
    finished_ = true;
    const grpc::Status status = *finish_;
    lock.unlock();
    Finish(status);
    return;
  }
  if (queue_.empty()) return;
  Pending next = std::move(queue_.front());
  queue_.pop_front();
  if (next.type != v1::IncidentEvent::TYPE_EXISTING) --live_;
  writing_ = true;
  lock.unlock();
  // Only the holder of `writing_` touches current_.
  current_.Clear();
  current_.set_type(next.type);
  *current_.mutable_incident() = wire::toProto(next.event->incident);
  StartWrite(&current_);
}

void IncidentWatch::OnWriteDone(bool ok) {
  {
    std::lock_guard lock(mutex_);
    writing_ = false;
    if (!ok && !finish_) {
      // The client has gone: nothing more can reach it.
      queue_.clear();
      live_ = 0;
      finish_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the stream broke");
    }
  }
  step();
}

void IncidentWatch::OnCancel() { end(grpc::Status::CANCELLED); }

void IncidentWatch::OnDone() {
  subscription_.reset();
  registry_.remove(this);
}

IncidentWatch* IncidentWatchers::start(IncidentFeed& feed, std::size_t queue_limit, Executor work) {
  auto watch = std::make_shared<IncidentWatch>(*this, queue_limit, std::move(work));
  {
    // Under the lock: endAll() ends every call it registered, subscribed or not.
    std::lock_guard lock(mutex_);
    if (closed_) return nullptr;
    watches_.emplace(watch.get(), watch);
    watch->subscribe(feed);
  }
  // Outside it: gRPC may run the call's reactions here. `watch` keeps it alive meanwhile.
  watch->begin();
  return watch.get();
}

void IncidentWatchers::endAll() {
  std::vector<std::shared_ptr<IncidentWatch>> watches;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (const auto& [raw, watch] : watches_) watches.push_back(watch);
  }
  for (const auto& watch : watches) {
    watch->end(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the service is stopping"));
  }
}

std::size_t IncidentWatchers::count() const {
  std::lock_guard lock(mutex_);
  return watches_.size();
}

void IncidentWatchers::remove(IncidentWatch* watch) {
  std::shared_ptr<IncidentWatch> last;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  if (auto it = watches_.find(watch); it != watches_.end()) {
    last = std::move(it->second);
    watches_.erase(it);
  }
}

}  // namespace wctmon::api
