#pragma once

#include <functional>

namespace wctmon {

/// A unit of work handed to an executor.
using Task = std::function<void()>;

/// Where a task runs: posts it to run later, never inline. In the service an Asio strand or the
/// pool, in the one-shot command the loop of the calling thread, in tests a queue the test drains.
/// Completion handlers of asynchronous operations run on the executor their caller gave.
using Executor = std::function<void(Task)>;

}  // namespace wctmon
