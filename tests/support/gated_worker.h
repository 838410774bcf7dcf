// A worker thread whose tasks can be held back: what a read stuck in the kernel, or a pool busy
// elsewhere, looks like to the code that handed it work.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace wctmon::testing {

class GatedWorker {
 public:
  using Task = std::function<void()>;

  GatedWorker() : thread_([this] { loop(); }) {}
  ~GatedWorker() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      held_ = false;
    }
    wake_.notify_all();
    thread_.join();
  }
  GatedWorker(const GatedWorker&) = delete;
  GatedWorker& operator=(const GatedWorker&) = delete;

  /// What posts to this worker: converts to the service's Executor (a post function).
  [[nodiscard]] auto executor() {
    return [this](Task task) {
      {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
      }
      wake_.notify_all();
    };
  }

  /// Tasks posted from now on wait until release().
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }

  /// Runs the tasks held back, and later ones at once.
  void release() {
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    wake_.notify_all();
  }

 private:
  void loop() {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return done_ || (!held_ && !tasks_.empty()); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  bool held_ = false;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace wctmon::testing
