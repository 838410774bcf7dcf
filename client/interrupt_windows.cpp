#include <windows.h>

#include <atomic>
#include <thread>

#include "client/interrupt.h"

namespace wctmon::client {
namespace {

/// Set while a watch is alive: the console's handler (on a thread the system makes) signals it.
std::atomic<HANDLE> interrupt_event{nullptr};

BOOL WINAPI onConsoleEvent(DWORD event) {
  if (event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT && event != CTRL_CLOSE_EVENT) {
    return FALSE;
  }
  const HANDLE e = interrupt_event.load();
  if (e == nullptr) return FALSE;  // no watch: the default handler ends wctctl
  ::SetEvent(e);
  return TRUE;
}

}  // namespace

struct InterruptWatch::State {
  HANDLE interrupt = nullptr;
  HANDLE quit = nullptr;
  std::atomic<bool> interrupted{false};
  std::thread waiter;
};

InterruptWatch::InterruptWatch(std::function<void()> on_interrupt)
    : state_(std::make_unique<State>()) {
  state_->interrupt = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
  state_->quit = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
  if (state_->interrupt == nullptr || state_->quit == nullptr) return;  // Ctrl+C ends wctctl
  interrupt_event = state_->interrupt;
  ::SetConsoleCtrlHandler(onConsoleEvent, TRUE);
  state_->waiter = std::thread([state = state_.get(), on_interrupt = std::move(on_interrupt)] {
    const HANDLE events[] = {state->interrupt, state->quit};
    if (::WaitForMultipleObjects(2, events, FALSE, INFINITE) == WAIT_OBJECT_0) {
      state->interrupted = true;
      on_interrupt();
    }
  });
}

InterruptWatch::~InterruptWatch() {
  if (state_->waiter.joinable()) {
    ::SetConsoleCtrlHandler(onConsoleEvent, FALSE);
    interrupt_event = nullptr;
    ::SetEvent(state_->quit);
    state_->waiter.join();
  }
  if (state_->interrupt != nullptr) ::CloseHandle(state_->interrupt);
  if (state_->quit != nullptr) ::CloseHandle(state_->quit);
}

bool InterruptWatch::interrupted() const { return state_->interrupted; }

}  // namespace wctmon::client
