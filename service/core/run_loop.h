#pragma once

#include <deque>
#include <mutex>
#include <utility>

#include "core/executor.h"

namespace wctmon {

/// An executor whose tasks run on the thread that calls run(): what drives an asynchronous
/// operation to its end where nothing else would (the one-shot command, tests). Tasks may be
/// posted from any thread.
class RunLoop {
 public:
  /// The executor to hand out; valid while this loop lives.
  [[nodiscard]] Executor executor() {
    return [this](Task task) {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    };
  }

  /// Runs tasks, including those they post, until none is left; returns how many ran.
  std::size_t run() {
    std::size_t ran = 0;
    for (;;) {
      Task task;
      {
        std::lock_guard lock(mutex_);
        if (tasks_.empty()) return ran;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
      ++ran;
    }
  }

 private:
  std::mutex mutex_;
  std::deque<Task> tasks_;
};

}  // namespace wctmon
