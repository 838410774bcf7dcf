#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
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

  /// Posts `result` to the handler, unless the operation has completed already. For results
  /// made within the initiating call or by whoever cancels the operation.
  void complete(Result<T> result) { deliver(std::move(result), false); }

  /// Dispatches `result` to the handler, unless the operation has completed already: for the
  /// result of the operation's own work, on a thread that holds no lock of the caller's (see
  /// Executor::dispatch).
  void completeFromWork(Result<T> result) { deliver(std::move(result), true); }

  [[nodiscard]] bool completed() const { return done_; }

 private:
  Completion(Executor executor, Handler handler)
      : executor_(std::move(executor)), handler_(std::move(handler)) {}

  void deliver(Result<T> result, bool from_work) {
    if (done_.exchange(true)) return;
    // Only the first caller gets here, so the handler is moved out once.
    Task task = [handler = std::move(handler_), result = std::move(result)]() mutable {
      handler(std::move(result));
    };
    if (from_work) {
      executor_.dispatch(std::move(task));
    } else {
      executor_.post(std::move(task));
    }
  }

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

/// The name of an operation in its errors: a string, or a callable that makes one, so that an
/// operation started hundreds of times a second builds its name only when it fails.
template <typename What>
[[nodiscard]] std::string operationName(const What& what) {
  if constexpr (std::is_invocable_v<const What&>) {
    return what();
  } else {
    return std::string(what);
  }
}

/// Starts an operation on `slot`: completes `completion` with kBusy and returns false when the
/// slot is taken; otherwise a later cancel() of the slot completes it with kCancelled. `what`
/// names the operation (see operationName).
template <typename T, typename What>
[[nodiscard]] bool beginOperation(OperationSlot& slot,
                                  const std::shared_ptr<Completion<T>>& completion, What what) {
  if (slot.begin(
          [completion, what] { completion->complete(cancelledError(operationName(what))); })) {
    return true;
  }
  completion->complete(busyError(operationName(what)));
  return false;
}

}  // namespace wctmon
