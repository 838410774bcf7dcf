#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "core/executor.h"
#include "model/result.h"

namespace wctmon {

/// The completion handler of one asynchronous operation and the executor it runs on. Completes
/// exactly once: whichever of the result, a cancellation or a refusal comes first is delivered,
/// the others are dropped. Shared between the operation's work and whoever may cancel it.
template <typename T>
class Completion {
 public:
  using Handler = std::function<void(Result<T>)>;

  [[nodiscard]] static std::shared_ptr<Completion> make(Executor executor, Handler handler) {
    return std::shared_ptr<Completion>(new Completion(std::move(executor), std::move(handler)));
  }

  /// Posts `result` to the handler, unless the operation has completed already.
  void complete(Result<T> result) {
    if (done_.exchange(true)) return;
    // Only the first caller gets here, so the handler is moved out once.
    executor_([handler = std::move(handler_), result = std::move(result)]() mutable {
      handler(std::move(result));
    });
  }

  [[nodiscard]] bool completed() const { return done_; }

 private:
  Completion(Executor executor, Handler handler)
      : executor_(std::move(executor)), handler_(std::move(handler)) {}

  Executor executor_;
  Handler handler_;
  std::atomic<bool> done_{false};
};

/// What a session keeps of its operation in flight: one at a time, cancellable. The slot stays
/// taken until the platform's work for the operation has ended, even when the operation was
/// cancelled and its handler has already run.
class OperationSlot {
 public:
  /// Takes the slot for an operation that `cancel` completes with kCancelled; false when it is
  /// taken.
  [[nodiscard]] bool begin(std::function<void()> cancel) {
    std::lock_guard lock(mutex_);
    if (busy_) return false;
    busy_ = true;
    cancel_ = std::move(cancel);
    return true;
  }

  /// The platform's work for the operation has ended: the slot is free again.
  void end() {
    std::lock_guard lock(mutex_);
    busy_ = false;
    cancel_ = nullptr;
  }

  /// Completes the operation in flight with kCancelled, if there is one.
  void cancel() {
    std::function<void()> cancel;
    {
      std::lock_guard lock(mutex_);
      cancel = cancel_;
    }
    if (cancel) cancel();
  }

 private:
  std::mutex mutex_;
  bool busy_ = false;
  std::function<void()> cancel_;
};

/// The error of a cancelled operation.
[[nodiscard]] inline Error cancelledError(const std::string& what) {
  return makeError(ErrorCode::kCancelled, what + " was cancelled");
}

/// The error of an operation refused because the previous one has not ended.
[[nodiscard]] inline Error busyError(const std::string& what) {
  return makeError(ErrorCode::kBusy, what + ": the previous operation has not ended yet");
}

/// Starts an operation on `slot`: completes `completion` with kBusy and returns false when the
/// slot is taken; otherwise a later cancel() of the slot completes it with kCancelled.
template <typename T>
[[nodiscard]] bool beginOperation(OperationSlot& slot,
                                  const std::shared_ptr<Completion<T>>& completion,
                                  const std::string& what) {
  if (slot.begin([completion, what] { completion->complete(cancelledError(what)); })) return true;
  completion->complete(busyError(what));
  return false;
}

}  // namespace wctmon
