#pragma once

#include <functional>
#include <memory>

namespace wctmon::client {

/// While alive, calls `on_interrupt` (from a thread of its own, at most once) when the user
/// interrupts wctctl: Ctrl+C, or SIGTERM on POSIX. A stream ends cleanly that way instead of
/// dying mid-line. One implementation per platform (interrupt_posix.cpp, interrupt_windows.cpp).
class InterruptWatch {
 public:
  explicit InterruptWatch(std::function<void()> on_interrupt);
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  /// Whether the user interrupted.
  [[nodiscard]] bool interrupted() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wctmon::client
