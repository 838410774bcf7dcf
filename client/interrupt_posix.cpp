#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "client/interrupt.h"

namespace wctmon::client {
namespace {

/// The write end of the pipe the signal handler writes to (async-signal-safe), -1 when none.
std::atomic<int> signal_pipe{-1};

void onSignal(int /*signal*/) {
  const char byte = 'i';
  if (const int fd = signal_pipe.load(); fd >= 0) (void)::write(fd, &byte, 1);
}

}  // namespace

struct InterruptWatch::State {
  int fds[2] = {-1, -1};
  std::atomic<bool> interrupted{false};
  struct sigaction old_int {};
  struct sigaction old_term {};
  std::thread waiter;
};

InterruptWatch::InterruptWatch(std::function<void()> on_interrupt)
    : state_(std::make_unique<State>()) {
  if (::pipe2(state_->fds, O_CLOEXEC) != 0) return;  // no watch: Ctrl+C ends wctctl as usual
  signal_pipe = state_->fds[1];
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &state_->old_int);
  ::sigaction(SIGTERM, &action, &state_->old_term);
  state_->waiter = std::thread([state = state_.get(), on_interrupt = std::move(on_interrupt)] {
    char byte = 0;
    // 'i' from the handler; 'q' from the destructor, or the pipe's end.
    if (::read(state->fds[0], &byte, 1) == 1 && byte == 'i') {
      state->interrupted = true;
      on_interrupt();
    }
  });
}

InterruptWatch::~InterruptWatch() {
  if (state_->fds[1] < 0) return;
  ::sigaction(SIGINT, &state_->old_int, nullptr);
  ::sigaction(SIGTERM, &state_->old_term, nullptr);
  signal_pipe = -1;
  const char quit = 'q';
  (void)::write(state_->fds[1], &quit, 1);
  state_->waiter.join();
  ::close(state_->fds[0]);
  ::close(state_->fds[1]);
}

bool InterruptWatch::interrupted() const { return state_->interrupted; }

}  // namespace wctmon::client
