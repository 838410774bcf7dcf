#pragma once

#include <functional>
#include <type_traits>
#include <utility>

namespace wctmon {

/// A unit of work handed to an executor.
using Task = std::function<void()>;

/// Where a task runs: in the service an Asio strand or the pool, in the one-shot command the
/// loop of the calling thread, in tests a queue the test drains. Completion handlers of
/// asynchronous operations run on the executor their caller gave.
///
/// post() never runs the task inline. dispatch() may run it at once on the calling thread, when
/// the executor allows that thread to run it now (Asio's dispatch: a strand held by no one,
/// from a thread of its pool), and posts it otherwise. An operation posts a completion that
/// comes from within its initiating call, so that a handler never runs inside the call that
/// started it, and dispatches one that comes from its own work on a worker: the handler then
/// runs on the thread that holds the result in its caches, without a hand-off per operation.
class Executor {
 public:
  /// Runs `task` later, or now when `may_run_inline` and the executor allows it.
  using Function = std::function<void(Task task, bool may_run_inline)>;

  Executor() = default;

  /// An executor that always posts, made of a function that runs its task later.
  template <typename Post>
  requires(std::is_invocable_v<Post&, Task> && !std::is_same_v<std::decay_t<Post>, Executor>)
      Executor(Post post)  // NOLINT(google-explicit-constructor): a post function is an executor
      : run_([post = std::move(post)](Task task, bool) mutable { post(std::move(task)); }) {}

  /// An executor that can dispatch.
  [[nodiscard]] static Executor dispatching(Function run) {
    Executor executor;
    executor.run_ = std::move(run);
    return executor;
  }

  void post(Task task) const { run_(std::move(task), false); }
  void dispatch(Task task) const { run_(std::move(task), true); }
  /// Posts: what a plain function of a task would do.
  void operator()(Task task) const { post(std::move(task)); }

  explicit operator bool() const { return static_cast<bool>(run_); }

 private:
  Function run_;
};

}  // namespace wctmon
