#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>

#include "core/ports/hot_spot_sampler.h"
#include "model/mutex.h"

namespace wctmon {

/// The profiles of a HotSpotSampler, run one after the other on a thread of the queue's own:
/// they are rare (a thread busy past its threshold) and each takes its two windows. A profile
/// under way when the queue is destroyed is asked to stop (its `stop` flag is set) and those
/// still waiting end cancelled.
class ProfileQueue {
 public:
  /// Profiles one thread over two windows, giving up (kCancelled) once `stop` is set where it
  /// can.
  using Profiler = std::function<Result<ThreadProfile>(
      ThreadRef thread, std::chrono::milliseconds window, const std::atomic<bool>& stop)>;

  explicit ProfileQueue(Profiler profiler);
  ~ProfileQueue();
  ProfileQueue(const ProfileQueue&) = delete;
  ProfileQueue& operator=(const ProfileQueue&) = delete;

  /// Queues a profile of `thread`; `done` runs once, on the queue's thread.
  void push(ThreadRef thread, std::chrono::milliseconds window,
            std::function<void(Result<ThreadProfile>)> done);

 private:
  struct Job {
    ThreadRef thread;
    std::chrono::milliseconds window;
    std::function<void(Result<ThreadProfile>)> done;
  };
  void loop();

  const Profiler profiler_;
  Mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_ WCTMON_GUARDED_BY(mutex_);
  std::atomic<bool> stopping_{false};
  std::thread worker_;  // last: started once the rest is there
};

}  // namespace wctmon
