// An executor that runs the tasks posted to it on a thread of its own, in order, as the
// service's pool would, for tests of asynchronous code; its tasks can be held back, as a read
// stuck in the kernel or a pool busy elsewhere looks to the code that handed it work.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace wctmon::testing {

class ThreadExecutor {
 public:
  ThreadExecutor() : thread_([this] { loop(); }) {}
  ~ThreadExecutor() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      held_ = false;
    }
    wake_.notify_all();
    thread_.join();
  }
  ThreadExecutor(const ThreadExecutor&) = delete;
  ThreadExecutor& operator=(const ThreadExecutor&) = delete;

  using Task = std::function<void()>;

  /// What posts to this thread: converts to the service's Executor (a post function).
  [[nodiscard]] auto executor() {
    return [this](Task task) {
      {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
      }
      wake_.notify_all();
    };
  }

  /// The thread the tasks run on.
  [[nodiscard]] std::thread::id id() const { return thread_.get_id(); }

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
