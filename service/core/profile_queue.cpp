#include "core/profile_queue.h"

namespace wctmon {

ProfileQueue::ProfileQueue(Profiler profiler)
    : profiler_(std::move(profiler)), worker_([this] { loop(); }) {}

ProfileQueue::~ProfileQueue() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void ProfileQueue::push(ThreadRef thread, std::chrono::milliseconds window,
                        std::function<void(Result<ThreadProfile>)> done) {
  {
    MutexLock lock(mutex_);
    jobs_.push_back(Job{thread, window, std::move(done)});
  }
  wake_.notify_all();
}

void ProfileQueue::loop() {
  MutexLock lock(mutex_);
  while (true) {
    lock.wait(wake_, [this]() WCTMON_REQUIRES(mutex_) { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job.done(stopping_ ? makeError(ErrorCode::kCancelled, "the service is stopping")
                       : profiler_(job.thread, job.window, stopping_));
    lock.lock();
  }
}

}  // namespace wctmon
