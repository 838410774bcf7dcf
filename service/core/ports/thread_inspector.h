#pragma once

#include <span>
#include <vector>

#include "model/ids.h"
#include "model/wait_model.h"

namespace wctmon {

/// Captures the register context and the stack of threads by stopping each one briefly:
/// ptrace on Linux, SuspendThread + GetThreadContext on Windows. Every stopped thread is released
/// before the call returns, on every path.
class ThreadInspector {
 public:
  virtual ~ThreadInspector() = default;

  /// One capture per thread, in order; a failure is reported in that capture's `error`.
  [[nodiscard]] virtual std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) = 0;
};

}  // namespace wctmon
